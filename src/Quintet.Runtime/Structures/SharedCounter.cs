using Google.Protobuf;
using Quintet.Components;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>The state of a shared counter: one number, changed only by ordered commands.</summary>
internal sealed class SharedCounterState(string name, SharedStructureLimits limits) : SharedState<CounterChange>($"counter {name}", limits)
{
    public long Value { get; private set; }

    protected override byte[] ApplyCommand(ReadOnlySpan<byte> command)
    {
        var parsed = CounterCommand.Parser.ParseFrom(command);
        var result = parsed.KindCase switch
        {
            CounterCommand.KindOneofCase.Add => Add(parsed.Add),
            CounterCommand.KindOneofCase.CompareAndSet => CompareAndSet(parsed.CompareAndSet),
            _ => new CounterResult { Error = "unknown command", Value = Value },
        };
        return WireBytes.ToArray(result);
    }

    public override byte[] TakeSnapshot() => new CounterSnapshot { Value = Value, Position = Position }.ToByteArray();

    protected override long Restore(ReadOnlySpan<byte> snapshot)
    {
        var parsed = CounterSnapshot.Parser.ParseFrom(snapshot);
        Value = parsed.Value;
        return parsed.Position;
    }

    public override (long Entries, long? Bytes, long Leased) Figures() => (1, null, 0);

    public override SharedStructurePage Browse(string? after, int pageSize) => after is null
        ? new SharedStructurePage(Position, 1, [new SharedStructureEntry("value", System.Text.Encoding.UTF8.GetBytes(Value.ToString(System.Globalization.CultureInfo.InvariantCulture)))], false)
        : after == "value" ? new SharedStructurePage(Position, 1, [], false) : throw new FormatException($"'{after}' is no position in a counter.");

    private CounterResult Add(long delta)
    {
        long sum;
        try
        {
            sum = checked(Value + delta);
        }
        catch (OverflowException)
        {
            return new CounterResult { Error = $"adding {delta} to {Value} would overflow a 64-bit counter", Value = Value };
        }

        Set(sum);
        return new CounterResult { Applied = true, Value = sum };
    }

    private CounterResult CompareAndSet(CounterCompareAndSet cas)
    {
        if (Value != cas.Expected)
        {
            return new CounterResult { Applied = false, Value = Value };
        }

        Set(cas.Value);
        return new CounterResult { Applied = true, Value = Value };
    }

    private void Set(long value)
    {
        var previous = Value;
        Value = value;
        if (Changes.IsWatched && previous != value)
        {
            Publish(new CounterChange(Position, previous, value));
        }
    }
}

/// <summary>A shared counter as this manager serves it to its instances.</summary>
internal sealed class SharedCounter(string name, ReplicatedStateMachine<SharedCounterState> machine)
    : SharedStructure<SharedCounterState, CounterChange>(name, machine), ISharedCounter
{
    public long Value => Machine.Read(s => s.Value);

    public async Task<long> ReadLinearizableAsync(CancellationToken cancellationToken = default)
    {
        await Machine.SyncAsync(cancellationToken);
        return Value;
    }

    public async Task<long> AddAsync(long delta, CancellationToken cancellationToken = default)
    {
        var result = await ExecuteAsync(new CounterCommand { Add = delta }, cancellationToken);
        return result.Error.Length > 0 ? throw Refused("counter", new OverflowException($"Shared counter '{Name}' refused the addition: {result.Error}; nothing changed.")) : result.Value;
    }

    public async Task<bool> CompareAndSetAsync(long expected, long value, CancellationToken cancellationToken = default) =>
        (await ExecuteAsync(new CounterCommand { CompareAndSet = new CounterCompareAndSet { Expected = expected, Value = value } }, cancellationToken)).Applied;

    private async Task<CounterResult> ExecuteAsync(CounterCommand command, CancellationToken cancellationToken) =>
        CounterResult.Parser.ParseFrom((await Machine.ExecuteMessageAsync(command, cancellationToken)).AsSpan());
}
