#if (replication != "none")
using ProtoBuf;
#endif
using Quintet.Components;

namespace Component1;

#if (replication == "none")
/// <summary>One counter per key. Calls to an instance take turns, so the field needs no lock.</summary>
public sealed class CounterComponent : Component, ICounter
{
    private long _value;

    /// <inheritdoc />
    public Task<CounterValue> AddAsync(AddRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _value = checked(_value + request.Amount);
        return Task.FromResult(Current());
    }

    /// <inheritdoc />
    public Task<CounterValue> GetAsync(GetRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    private CounterValue Current() => new() { Value = _value, Manager = Context.Manager };
}
#else
/// <summary>
#if (replication == "primary-backup")
/// One counter per key, primary/backup (quintet-qos.yaml): the new state goes to the backup before the call answers,
/// so an acknowledged addition survives the loss of the primary's manager.
#else
/// One counter per key, actively replicated (quintet-qos.yaml): every replica runs every call in one total order, so
/// the state is the same on each and survives the loss of any one manager.
#endif
/// </summary>
public sealed class CounterComponent : Component<CounterState>, ICounter
{
#if (replication == "primary-backup")
    /// <inheritdoc />
    public async Task<CounterValue> AddAsync(AddRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        State.Value = checked(State.Value + request.Amount);
        await UpdateBackupsAsync(cancellationToken);
        return Current();
    }
#else
    /// <inheritdoc />
    public Task<CounterValue> AddAsync(AddRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        State.Value = checked(State.Value + request.Amount);
        return Task.FromResult(Current());
    }
#endif

    /// <inheritdoc />
    public Task<CounterValue> GetAsync(GetRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    private CounterValue Current() => new() { Value = State.Value, Manager = Context.Manager };
}

/// <summary>What an instance keeps: checkpointed, sent to its replicas, carried when it moves.</summary>
[ProtoContract]
public sealed class CounterState
{
    /// <summary>The counter's value.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }
}
#endif
