using System.Globalization;
using System.Text;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// Registers in the shared dictionary <c>workload-registers</c> (values as decimal text), a set whose members are the
/// keys of the shared dictionary <c>workload-set</c>, the shared queue <c>workload-queue</c>, the shared counter
/// <c>workload-counter</c>, the lock <c>workload-lock</c> and the election <c>workload-leader</c> (opened on first use).
/// Any instance on any manager serves any key of those; the store operations work on the instance's own stream.
/// </summary>
public sealed class WorkloadTargetComponent : Component, IWorkloadTarget
{
    // The resource the lock protects, one per worker process (so per manager): it refuses an exclusive holder whose
    // token is lower than one it already admitted, as a store written by lock holders would.
    private static readonly FencingGate Gate = new();

    private ISharedDictionary? _registers;
    private ISharedDictionary? _set;
    private ISharedDictionary? _durableSet;
    private ISharedQueue? _queue;
    private ISharedCounter? _counter;
    private IDistributedLock? _lock;
    private ILeaderElection? _election;
    private ILockHold? _hold;


    /// <inheritdoc />
    public async Task<RegisterReply> ReadAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var value = await (await RegistersAsync(cancellationToken)).GetLinearizableAsync(request.Key, cancellationToken);
        return value is { } bytes ? new RegisterReply { Value = Decode(bytes), Found = true } : new RegisterReply();
    }

    /// <inheritdoc />
    public async Task<RegisterReply> WriteAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await (await RegistersAsync(cancellationToken)).SetAsync(request.Key, Encode(request.Value), cancellationToken);
        return new RegisterReply { Value = request.Value, Found = true, Applied = true };
    }

    /// <inheritdoc />
    public async Task<RegisterReply> CompareAndSetAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var applied = request.ExpectAbsent
            ? await (await RegistersAsync(cancellationToken)).TryAddAsync(request.Key, Encode(request.Value), cancellationToken)
            : await (await RegistersAsync(cancellationToken)).TryUpdateAsync(request.Key, Encode(request.Expected), Encode(request.Value), cancellationToken);
        return new RegisterReply { Value = request.Value, Found = true, Applied = applied };
    }

    /// <inheritdoc />
    public async Task<SetReply> AddAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await (await MembersAsync(request.Durable, cancellationToken)).SetAsync(Member(request.Element), Encode(request.Element), cancellationToken);
        return new SetReply { Elements = [request.Element] };
    }

    /// <inheritdoc />
    public async Task<SetReply> ReadSetAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);

        // The dictionary does not list its keys: one linearizable read brings this replica up to every update ordered
        // before the call, and then the local replica answers for every member asked for.
        var set = await MembersAsync(request.Durable, cancellationToken);
        await set.GetLinearizableAsync(Member(0), cancellationToken);
        var reply = new SetReply { Count = set.Count };
        for (long element = 1; element <= request.Element; element++)
        {
            if (set.TryGet(Member(element), out var stored))
            {
                // A member stored under the wrong value is reported as that value, which the checker finds unexpected.
                reply.Elements.Add(Decode(stored));
            }
        }

        return reply;
    }

    /// <inheritdoc />
    public async Task<QueueReply> EnqueueAsync(QueueRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await (await QueueAsync(cancellationToken)).EnqueueAsync(Encode(request.Element), cancellationToken);
        return new QueueReply();
    }

    /// <inheritdoc />
    public async Task<QueueReply> DequeueAsync(QueueRequest request, CancellationToken cancellationToken)
    {
        var item = await (await QueueAsync(cancellationToken)).TryDequeueAsync(cancellationToken);
        return item is null ? new QueueReply() : new QueueReply { Elements = [Decode(item.Value)] };
    }

    /// <inheritdoc />
    public async Task<QueueReply> DrainAsync(QueueRequest request, CancellationToken cancellationToken)
    {
        var queue = await QueueAsync(cancellationToken);
        var reply = new QueueReply();
        while (await queue.TryDequeueAsync(cancellationToken) is { } item)
        {
            reply.Elements.Add(Decode(item.Value));
        }

        return reply;
    }

    /// <inheritdoc />
    public async Task<CounterReply> AddToCounterAsync(CounterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        return new CounterReply { Value = await (await CounterAsync(cancellationToken)).AddAsync(request.Delta, cancellationToken) };
    }

    /// <inheritdoc />
    public async Task<CounterReply> ReadCounterAsync(CounterRequest request, CancellationToken cancellationToken) =>
        new() { Value = await (await CounterAsync(cancellationToken)).ReadLinearizableAsync(cancellationToken) };

    /// <inheritdoc />
    public async Task<LockReply> AcquireLockAsync(LockRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (_hold is { } previous)
        {
            // A hold left over from an acquire whose reply the client never saw: the client does not count it as held.
            _hold = null;
            await previous.ReleaseAsync(cancellationToken);
        }

        _lock ??= await Context.Coordination.LockAsync("workload-lock", cancellationToken);
        ILockHold hold;
        try
        {
            hold = await _lock.AcquireAsync(
                request.Exclusive ? LockMode.Exclusive : LockMode.Shared,
                TimeSpan.FromMilliseconds(request.TimeoutMilliseconds),
                cancellationToken);
        }
        catch (TimeoutException)
        {
            return new LockReply { Refusal = "timeout" };
        }

        if (hold.Mode == LockMode.Exclusive && !Gate.TryAdmit(hold.Token))
        {
            await hold.ReleaseAsync(cancellationToken);
            return new LockReply { Token = hold.Token, Refusal = "stale-token" };
        }

        _hold = hold;
        return new LockReply { Granted = true, Token = hold.Token };
    }

    /// <inheritdoc />
    public async Task<LockReply> ReleaseLockAsync(LockRequest request, CancellationToken cancellationToken)
    {
        if (_hold is not { } hold)
        {
            // This activation never granted it: the one that did is gone (failover), and its hold with it.
            return new LockReply();
        }

        _hold = null;
        var held = !hold.Lost.IsCancellationRequested;
        await hold.ReleaseAsync(cancellationToken);
        return new LockReply { Granted = held, Token = hold.Token };
    }

    /// <inheritdoc />
    public async Task<LeaderReply> ObserveLeaderAsync(LeaderRequest request, CancellationToken cancellationToken)
    {
        _election ??= await Context.Coordination.JoinElectionAsync("workload-leader", cancellationToken);
        var current = await _election.ReadLinearizableAsync(cancellationToken);
        return new LeaderReply { Leader = current.Leader ?? string.Empty, Epoch = current.Epoch };
    }

    /// <inheritdoc />
    public async Task<StoreReply> AppendRecordAsync(StoreRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await Context.Checkpoints.AppendAsync(Encoding.UTF8.GetBytes(request.Text), cancellationToken);
        return new StoreReply();
    }

    /// <inheritdoc />
    public async Task<StoreReply> CheckpointAsync(StoreRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var checkpoint = Encoding.UTF8.GetBytes(request.Repeat > 0 ? string.Concat(Enumerable.Repeat(request.Text, request.Repeat)) : request.Text);
        await Context.Checkpoints.WriteCheckpointAsync(checkpoint, cancellationToken);
        await Context.Checkpoints.TruncateAsync(cancellationToken);
        return new StoreReply { Checkpoint = request.Repeat > 0 ? Digest(checkpoint) : request.Text };
    }

    /// <inheritdoc />
    public async Task<StoreReply> RecoverAsync(StoreRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var recovery = await Context.Checkpoints.RecoverAsync(cancellationToken);
        return new StoreReply
        {
            Checkpoint = recovery.Checkpoint is not { } checkpoint ? string.Empty
                : request.Repeat > 0 ? Digest(checkpoint.Span)
                : Encoding.UTF8.GetString(checkpoint.Span),
            Log = [.. recovery.Log.Select(r => Encoding.UTF8.GetString(r.Data.Span))],
        };
    }

    /// <inheritdoc />
    public async Task<StoreReply> UpdateBackupsAsync(StoreRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var state = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat(request.Text, Math.Max(1, request.Repeat))));
        await Context.Backups.UpdateAsync(state, cancellationToken);
        return new StoreReply { Checkpoint = Digest(state), Log = [.. Context.Backups.Managers] };
    }

    /// <inheritdoc />
    public async Task<StoreReply> PutLargeAsync(StoreRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var value = new byte[request.Repeat];
        Array.Fill(value, (byte)'v');
        await (await RegistersAsync(cancellationToken)).SetAsync(request.Text, value, cancellationToken);
        return new StoreReply { Checkpoint = Digest(value) };
    }

    private static string Digest(ReadOnlySpan<byte> data) =>
        $"{data.Length} bytes, SHA-256 {Convert.ToHexString(System.Security.Cryptography.SHA256.HashData(data))}";

    /// <inheritdoc />
    protected override async Task OnDeactivateAsync(DeactivationReason reason, CancellationToken cancellationToken)
    {
        if (_election is not null)
        {
            await _election.DisposeAsync();
        }

        if (_hold is not null)
        {
            await _hold.DisposeAsync();
        }
    }

    // Each structure is opened on first use only: a manager joins the replicas of each structure it opens, and a
    // workload's managers need join only those of the structure under test.
    private async Task<ISharedDictionary> RegistersAsync(CancellationToken cancellationToken) =>
        _registers ??= await Context.Shared.DictionaryAsync("workload-registers", cancellationToken);

    private async Task<ISharedDictionary> MembersAsync(bool durable, CancellationToken cancellationToken) => durable
        ? _durableSet ??= await Context.Shared.DictionaryAsync("workload-set-durable", new SharedStructureOptions { Durable = true }, cancellationToken)
        : _set ??= await Context.Shared.DictionaryAsync("workload-set", cancellationToken);

    private async Task<ISharedQueue> QueueAsync(CancellationToken cancellationToken) =>
        _queue ??= await Context.Shared.QueueAsync("workload-queue", cancellationToken);

    private async Task<ISharedCounter> CounterAsync(CancellationToken cancellationToken) =>
        _counter ??= await Context.Shared.CounterAsync("workload-counter", cancellationToken);

    private static string Member(long element) => element.ToString(CultureInfo.InvariantCulture);

    private static byte[] Encode(long value) => Encoding.ASCII.GetBytes(value.ToString(CultureInfo.InvariantCulture));

    private static long Decode(ReadOnlyMemory<byte> bytes) => long.Parse(Encoding.ASCII.GetString(bytes.Span), CultureInfo.InvariantCulture);
}
