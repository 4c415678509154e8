using System.Diagnostics;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Logging;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Replication;

/// <summary>
/// The embedded default store: every manager keeps a replica of every stream, and a write is acknowledged once a majority
/// of the cluster's managers (<see cref="IReplicaSet.Majority"/>), this one among them, hold it durably. Each
/// <see cref="Open"/> is a new writer: before its first read or write it seals the stream with an epoch above every
/// earlier writer's, on a majority, takes the latest acknowledged state from their copies and writes it back to them.
/// A replica then refuses the writes of older epochs, so a write an old owner left on a minority never resurfaces.
/// </summary>
public sealed partial class ReplicatedCheckpointStore(
    IReplicaSet replicas,
    ILogger logger,
    TimeSpan timeout,
    int maxRecordBytes = LocalCheckpointStore.DefaultMaxRecordBytes,
    long maxStreamBytes = ReplicaLimits.MaxStreamBytes)
    : IClusterCheckpointStore, IDescribedCheckpointStore
{
    // Concurrent sealers pick epochs in turn; a few rounds settle who writes.
    private const int MaxSealRounds = 8;

    /// <summary>The largest checkpoint or record accepted, in bytes.</summary>
    public int MaxRecordBytes { get; } = maxRecordBytes;

    /// <summary>
    /// The most a stream's last checkpoint and the records after it may hold, in bytes: a record that would take it
    /// further is refused (a checkpoint starts it over), so that every copy fits the messages between replicas.
    /// </summary>
    public long MaxStreamBytes { get; } = Math.Min(maxStreamBytes, ReplicaLimits.MaxStreamBytes);

    /// <inheritdoc />
    public ICheckpointLog Open(string stream)
    {
        ArgumentException.ThrowIfNullOrEmpty(stream);
        if (stream.Length > LocalCheckpointStore.MaxStreamLength)
        {
            throw new ArgumentException($"The stream name is {stream.Length} characters long; the most is {LocalCheckpointStore.MaxStreamLength}.", nameof(stream));
        }

        return new Writer(this, stream);
    }

    /// <summary>
    /// This manager's replica (its file, streams, bytes, last commit, health), the majority and every manager's replica as
    /// this one knows it; unhealthy also while this manager may not write (cut off from the majority).
    /// </summary>
    public ValueTask<CheckpointStoreDescription> DescribeAsync(CancellationToken cancellationToken = default)
    {
        var local = (Replicas.Local as ReplicaStore)?.Describe()
            ?? new CheckpointStoreDescription("replicated", Replicas.Local.Name, null, null, null, null, true, null, 0, 0, []);
        var states = Replicas.ReplicaStates();
        var details = new List<KeyValuePair<string, string>>
        {
            new("replication factor", states.Count > 0 ? $"{states.Count} (every manager keeps a replica)" : "every manager keeps a replica"),
            new("majority", Replicas.Majority.ToString(System.Globalization.CultureInfo.InvariantCulture)),
        };
        details.AddRange(local.Details);
        details.AddRange(states.Select(s => new KeyValuePair<string, string>($"replica {s.Key}", s.Value)));
        var problem = local.Problem;
        if (problem is null && Replicas.WhyNotWritable() is { } why)
        {
            problem = $"The store takes no writes here: {why}. It does once this manager is back with the majority; see 'quintet cluster show'.";
        }

        return ValueTask.FromResult(local with { Healthy = problem is null, Problem = problem, Details = details });
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Stream {Stream}: sealed at epoch {Epoch} on {Sealed} of {Reachable} managers; recovered up to position {Last} from {Source}")]
    private static partial void LogSealed(ILogger logger, string stream, long epoch, int @sealed, int reachable, long last, string source);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Stream {Stream}: the copy on {Replica} was {Problem}; rewrote it from the majority's state")]
    private static partial void LogRepaired(ILogger logger, string stream, string replica, string problem);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Stream {Stream}: {Problem}")]
    private static partial void LogWriteFailed(ILogger logger, string stream, string problem);

    /// <summary>One writer of one stream: the log of one activation of an instance.</summary>
    [System.Diagnostics.CodeAnalysis.SuppressMessage("Reliability", "CA1001", Justification = "The semaphore never allocates a wait handle (only WaitAsync is used), so it holds nothing to dispose; an ICheckpointLog is not disposable.")]
    private sealed class Writer(ReplicatedCheckpointStore store, string stream) : ICheckpointLog
    {
        // Writes wait here for a turn; whoever gets it replicates every write waiting then, in one operation.
        private const int MaxCombinedBytes = 1024 * 1024;
        private const int MaxCombinedWrites = 256;
        private readonly SemaphoreSlim _turn = new(1, 1);
        private readonly Lock _waitingGate = new();
        private readonly Queue<WaitingWrite> _waiting = new();
        private long _epoch;
        private long _version;
        private long _highestSeen;
        private long _next = 1;
        private long _lastCheckpoint;

        // The data bytes of the last checkpoint and the records after it: what a copy of the stream carries.
        private long _liveBytes;
        private CheckpointRecovery? _sealedState;
        private string? _fencedBy;

        public string Stream => stream;

        public Task<long> WriteCheckpointAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken = default) =>
            WriteAsync(EntryKind.Checkpoint, state, cancellationToken);

        public Task<long> AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) =>
            WriteAsync(EntryKind.Record, record, cancellationToken);

        public async Task<CheckpointRecovery> RecoverAsync(CancellationToken cancellationToken = default)
        {
            await _turn.WaitAsync(cancellationToken);
            try
            {
                if (_epoch == 0)
                {
                    await SealAsync(cancellationToken);
                }

                if (_sealedState is { } sealedState)
                {
                    return sealedState;
                }

                // This manager's replica holds every write this writer made: it took each before it was acknowledged.
                var copy = await store.Replicas.Local.ReadAsync(stream);
                if (copy.Corrupt is null && copy.Synced == _epoch)
                {
                    return StreamRecovery.ToRecovery(copy.Entries);
                }

                await SealAsync(cancellationToken);
                return _sealedState!;
            }
            finally
            {
                _turn.Release();
            }
        }

        public async Task TruncateAsync(CancellationToken cancellationToken = default)
        {
            await _turn.WaitAsync(cancellationToken);
            try
            {
                await EnsureSealedAsync(cancellationToken);
                if (_lastCheckpoint > 0)
                {
                    await ReplicateAsync(new ReplicaOp(stream, _epoch, ++_version, ReplicaOpKind.Truncate, [], TruncateBefore: _lastCheckpoint), _next - 1, null);
                }
            }
            finally
            {
                _turn.Release();
            }
        }

        public async Task DeleteAsync(CancellationToken cancellationToken = default)
        {
            await _turn.WaitAsync(cancellationToken);
            try
            {
                await EnsureSealedAsync(cancellationToken);
                await ReplicateAsync(new ReplicaOp(stream, _epoch, ++_version, ReplicaOpKind.Sync, [], LastPosition: 0), 0, null);
                (_next, _lastCheckpoint, _liveBytes, _sealedState) = (1, 0, 0, null);
            }
            finally
            {
                _turn.Release();
            }
        }

        private async Task<long> WriteAsync(EntryKind kind, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
        {
            if (data.Length > store.MaxRecordBytes)
            {
                var what = kind == EntryKind.Checkpoint ? "checkpoint" : "record";
                throw new CheckpointStoreException(
                    $"Stream '{stream}': the {what} is {data.Length} bytes, over the limit of {store.MaxRecordBytes} bytes ({store.MaxRecordBytes / (1024.0 * 1024):0.##} MiB); nothing was written.",
                    stream,
                    position: null);
            }

            cancellationToken.ThrowIfCancellationRequested();
            var bytes = MemoryMarshal.TryGetArray(data, out var segment) && segment.Offset == 0 && segment.Count == segment.Array!.Length
                ? segment.Array
                : data.ToArray();
            var write = new WaitingWrite(kind, bytes);
            lock (_waitingGate)
            {
                _waiting.Enqueue(write);
            }

            try
            {
                await _turn.WaitAsync(cancellationToken);
            }
            catch (OperationCanceledException) when (write.TryAbandon())
            {
                // Nobody took it: it is never written.
                throw;
            }
            catch (OperationCanceledException)
            {
                // An earlier turn took it: it completes (acknowledged or failed), whatever the token says.
                return await write.Position;
            }

            try
            {
                while (!write.Position.IsCompleted)
                {
                    try
                    {
                        await EnsureSealedAsync(cancellationToken);
                    }
                    catch when (write.TryAbandon())
                    {
                        throw;
                    }

                    await ReplicateWaitingAsync();
                }

                return await write.Position;
            }
            finally
            {
                _turn.Release();
            }
        }

        /// <summary>
        /// Replicates, as one operation, the writes waiting from the head of the queue (under the turn): concurrent writes
        /// to one stream share a round to the replicas and their fsyncs. From here each write taken completes,
        /// acknowledged or failed, whatever its caller's token says.
        /// </summary>
        private async Task ReplicateWaitingAsync()
        {
            var batch = new List<WaitingWrite>();
            var refused = new List<(WaitingWrite Write, long Live)>();
            var live = _liveBytes;
            lock (_waitingGate)
            {
                var bytes = 0L;
                while (_waiting.TryPeek(out var next)
                    && batch.Count < MaxCombinedWrites
                    && (batch.Count == 0 || bytes + next.Bytes.Length <= MaxCombinedBytes))
                {
                    _waiting.Dequeue();
                    if (!next.TryTake())
                    {
                        continue;
                    }

                    var after = next.Kind == EntryKind.Checkpoint ? next.Bytes.Length : live + next.Bytes.Length;
                    if (after > store.MaxStreamBytes)
                    {
                        refused.Add((next, live));
                        continue;
                    }

                    live = after;
                    batch.Add(next);
                    bytes += next.Bytes.Length;
                }
            }

            foreach (var (write, liveThen) in refused)
            {
                write.Fail(new CheckpointStoreException(
                    $"Stream '{stream}': a record of {write.Bytes.Length} bytes would take the stream past {store.MaxStreamBytes} bytes ({store.MaxStreamBytes / (1024.0 * 1024):0.##} MiB) since its last checkpoint ({liveThen} bytes now), the most one copy of a stream may hold in the replicated store; nothing was written. Write a checkpoint: it replaces the records before it.",
                    stream,
                    position: null));
            }

            if (batch.Count == 0)
            {
                return;
            }

            var first = _next;
            var last = first + batch.Count - 1;
            try
            {
                await ReplicateAsync(new ReplicaOp(stream, _epoch, ++_version, ReplicaOpKind.Append, [.. batch.Select((w, i) => new StoredEntry(first + i, w.Kind, w.Bytes))]), last, null);
            }
            catch (Exception e)
            {
                foreach (var failed in batch)
                {
                    failed.Fail(e);
                }

                return;
            }

            _next = last + 1;
            _liveBytes = live;
            for (var i = batch.Count - 1; i >= 0; i--)
            {
                if (batch[i].Kind == EntryKind.Checkpoint)
                {
                    _lastCheckpoint = first + i;
                    break;
                }
            }

            _sealedState = null;
            for (var i = 0; i < batch.Count; i++)
            {
                batch[i].Complete(first + i);
            }
        }

        private async Task EnsureSealedAsync(CancellationToken cancellationToken)
        {
            if (_epoch == 0)
            {
                await SealAsync(cancellationToken);
            }
        }

        private async Task SealAsync(CancellationToken cancellationToken)
        {
            ThrowIfFenced();
            if (store.Replicas.WhyNotWritable() is { } why)
            {
                throw new CheckpointStoreException($"Stream '{stream}': {why}; it can be neither read nor written here.", stream, null);
            }

            var majority = store.Replicas.Majority;
            var epoch = _highestSeen + 1;
            for (var round = 0; round < MaxSealRounds; round++)
            {
                var reachable = store.Replicas.Reachable();
                if (reachable.Count < majority)
                {
                    throw Unavailable($"only {reachable.Count} of the cluster's managers are in this manager's view, fewer than the majority of {majority} needed to read it");
                }

                using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
                bounded.CancelAfter(store.Timeout);
                var replies = await GatherSealsAsync(reachable, epoch, majority, bounded.Token);
                cancellationToken.ThrowIfCancellationRequested();
                _highestSeen = Math.Max(_highestSeen, replies.Select(r => r.Copy.Promised).DefaultIfEmpty(epoch).Max());
                var sound = replies.Where(r => r.Sealed && r.Copy.Corrupt is null).ToList();
                if (sound.Count >= majority)
                {
                    await AdoptAsync(epoch, sound, replies, reachable.Count);
                    return;
                }

                if (replies.Any(r => !r.Sealed))
                {
                    // Another writer holds a later epoch (an earlier owner, or one racing this one): go above it.
                    epoch = Math.Max(_highestSeen, epoch) + 1;
                    continue;
                }

                throw Unavailable($"{sound.Count} of the {reachable.Count} reachable managers could seal it soundly within {store.Timeout.TotalSeconds:0.#} s (answers: {Describe(replies)}); a majority of the cluster's managers is {majority}");
            }

            throw Unavailable($"other writers kept sealing it at later epochs ({_highestSeen} is the latest seen)");
        }

        private async Task AdoptAsync(long epoch, List<SealReply> sound, List<SealReply> replies, int reachable)
        {
            var best = StreamRecovery.Choose([.. sound.Select(r => r.Copy)]);
            var source = sound.First(r => ReferenceEquals(r.Copy, best)).Replica;
            var damaged = replies.Where(r => r.Copy.Corrupt is not null).ToDictionary(r => r.Replica, r => $"corrupt ({r.Copy.Corrupt})", StringComparer.Ordinal);
            foreach (var behind in replies.Where(r => r.Copy.Corrupt is null && (r.Copy.Synced, r.Copy.Version) != (best.Synced, best.Version)))
            {
                damaged.TryAdd(behind.Replica, $"behind (epoch {behind.Copy.Synced}, position {behind.Copy.LastPosition})");
            }

            (_epoch, _version) = (epoch, 1);
            try
            {
                // Writing the chosen state back to a majority at this epoch makes it the state every later writer finds.
                await ReplicateAsync(new ReplicaOp(stream, epoch, 1, ReplicaOpKind.Sync, best.Entries, LastPosition: best.LastPosition), best.LastPosition, damaged);
            }
            catch
            {
                _epoch = 0;
                throw;
            }

            _next = best.LastPosition + 1;
            _liveBytes = best.Entries.Sum(e => (long)e.Data.Length);
            _lastCheckpoint = StreamRecovery.LastCheckpoint(best.Entries);
            _sealedState = StreamRecovery.ToRecovery(best.Entries);
            LogSealed(store._logger, stream, epoch, sound.Count, reachable, best.LastPosition, source);
        }

        private async Task<List<SealReply>> GatherSealsAsync(IReadOnlyList<IStoreReplica> reachable, long epoch, int majority, CancellationToken cancellationToken)
        {
            var pending = reachable.Select(r => SealOne(r, epoch, cancellationToken)).ToList();
            var replies = new List<SealReply>();
            while (pending.Count > 0)
            {
                var done = await Task.WhenAny(pending);
                pending.Remove(done);
                if (await done is { } reply)
                {
                    replies.Add(reply);
                }

                if (replies.Count(r => r.Sealed && r.Copy.Corrupt is null) >= majority)
                {
                    break;
                }
            }

            return replies;
        }

        private async Task<SealReply?> SealOne(IStoreReplica replica, long epoch, CancellationToken cancellationToken)
        {
            try
            {
                return await replica.SealAsync(stream, epoch, cancellationToken);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                return null;
            }
        }

        /// <summary>
        /// Sends a write to every reachable replica and waits until a majority, this manager's own among them, hold it
        /// durably. A replica that is behind is caught up from this manager's replica, which by then holds
        /// <paramref name="covers"/>; <paramref name="repairing"/> names replicas whose copies a seal found bad.
        /// </summary>
        private async Task ReplicateAsync(ReplicaOp op, long covers, Dictionary<string, string>? repairing)
        {
            var started = Stopwatch.GetTimestamp();
            var majority = store.Replicas.Majority;
            var reachable = store.Replicas.Reachable();
            if (reachable.Count < majority)
            {
                // Waiting cannot help until the view grows: say so now (a stopping manager must not hang on it).
                _epoch = 0;
                throw Unavailable($"only {reachable.Count} of the cluster's managers are in this manager's view, fewer than the majority of {majority} a write needs");
            }

            using var bounded = new CancellationTokenSource(store.Timeout);
            var local = store.Replicas.Local;
            var pending = reachable.Select(r => (Replica: r, Task: DeliverAsync(r, op, covers, repairing, bounded.Token))).ToList();
            var durable = new List<string>();
            var refusals = new List<string>();
            var localDurable = false;
            while (pending.Count > 0 && !(localDurable && durable.Count >= majority))
            {
                var done = await Task.WhenAny(pending.Select(p => p.Task));
                var index = pending.FindIndex(p => p.Task == done);
                var (replica, _) = pending[index];
                pending.RemoveAt(index);
                var result = await done;
                switch (result.Outcome)
                {
                    case OpOutcome.Durable:
                        durable.Add(replica.Name);
                        localDurable |= ReferenceEquals(replica, local);
                        break;
                    case OpOutcome.Fenced:
                        _fencedBy = $"a writer of epoch {result.Promised} (this writer's is {op.Epoch}), found on {replica.Name}";
                        _epoch = 0;
                        ThrowIfFenced();
                        break;
                    default:
                        refusals.Add($"{replica.Name}: {result.Outcome}{(result.Error is null ? string.Empty : $" ({result.Error})")}");
                        if (ReferenceEquals(replica, local))
                        {
                            pending.Clear();
                        }

                        break;
                }
            }

            if (localDurable && durable.Count >= majority)
            {
                if (repairing is null)
                {
                    StoreMetrics.Commit(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                }

                return;
            }

            // The write may be on a minority: a later writer decides whether it stands, so this one seals again first.
            _epoch = 0;
            var where = op.Kind == ReplicaOpKind.Append ? $"position {covers}" : op.Kind.ToString().ToLowerInvariant();
            var problem = $"{where} is durable on {durable.Count} of the {reachable.Count} reachable managers ([{string.Join(", ", durable)}]; {(refusals.Count == 0 ? "others did not answer" : string.Join("; ", refusals))}) within {store.Timeout.TotalSeconds:0.#} s; acknowledging needs a majority of the cluster's managers, {majority}, this one among them";
            LogWriteFailed(store._logger, stream, problem);
            throw new CheckpointStoreException($"Stream '{stream}': {problem}. The write is not acknowledged.", stream, op.Kind == ReplicaOpKind.Append ? covers : null);
        }

        private async Task<OpResult> DeliverAsync(IStoreReplica replica, ReplicaOp op, long covers, Dictionary<string, string>? repairing, CancellationToken cancellationToken)
        {
            try
            {
                var result = await replica.SubmitAsync(op, cancellationToken);
                var local = store.Replicas.Local;
                if (result.Outcome == OpOutcome.Behind && !ReferenceEquals(replica, local))
                {
                    // Catch-up: this manager's replica took the write first (its queue is in order), so its copy holds it.
                    // The sync carries that copy's version: arriving late, after newer writes, it changes nothing.
                    var copy = await local.ReadAsync(stream);
                    if (copy.Corrupt is not null || copy.Synced != op.Epoch || copy.Version < op.Version)
                    {
                        return OpResult.Failure($"behind, and this manager's own copy cannot catch it up (epoch {copy.Synced}, version {copy.Version}, position {copy.LastPosition}{(copy.Corrupt is null ? string.Empty : ", corrupt")})");
                    }

                    result = await replica.SubmitAsync(new ReplicaOp(stream, op.Epoch, copy.Version, ReplicaOpKind.Sync, copy.Entries, LastPosition: copy.LastPosition), cancellationToken);
                    if (result.Outcome == OpOutcome.Durable)
                    {
                        StoreMetrics.Repair(replica.Name);
                        LogRepaired(store._logger, stream, replica.Name, "behind");
                    }
                }
                else if (result.Outcome == OpOutcome.Durable && repairing is not null && repairing.TryGetValue(replica.Name, out var problem))
                {
                    StoreMetrics.Repair(replica.Name);
                    LogRepaired(store._logger, stream, replica.Name, problem);
                }

                return result;
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                return OpResult.Failure(e is OperationCanceledException ? "no answer in time" : e.Message);
            }
        }

        private void ThrowIfFenced()
        {
            if (_fencedBy is { } by)
            {
                throw new CheckpointStoreException(
                    $"Stream '{stream}': another writer has taken it over ({by}); this activation may no longer read or write it. The instance is now owned elsewhere.",
                    stream,
                    null);
            }
        }

        private CheckpointStoreException Unavailable(string problem) =>
            new($"Stream '{stream}': cannot be recovered or written: {problem}.", stream, null);

        private static string Describe(List<SealReply> replies) => replies.Count == 0
            ? "none"
            : string.Join(", ", replies.Select(r => $"{r.Replica} {(r.Copy.Corrupt is not null ? "corrupt" : r.Sealed ? "sealed" : $"refused (promised {r.Copy.Promised})")}"));

        /// <summary>A write waiting for its turn: taken into one operation by whoever holds the turn, or abandoned by its caller first.</summary>
        private sealed class WaitingWrite(EntryKind kind, byte[] bytes)
        {
            private readonly TaskCompletionSource<long> _position = new(TaskCreationOptions.RunContinuationsAsynchronously);
            private int _state; // 0 waiting, 1 taken, 2 abandoned

            public EntryKind Kind => kind;

            public byte[] Bytes => bytes;

            /// <summary>The position it was written at, once a majority holds it.</summary>
            public Task<long> Position => _position.Task;

            public bool TryTake() => Interlocked.CompareExchange(ref _state, 1, 0) == 0;

            public bool TryAbandon() => Interlocked.CompareExchange(ref _state, 2, 0) == 0;

            public void Complete(long position) => _position.TrySetResult(position);

            public void Fail(Exception failure) => _position.TrySetException(failure);
        }
    }

    internal IReplicaSet Replicas => replicas;

    internal TimeSpan Timeout => timeout;

    private readonly ILogger _logger = logger;
}
