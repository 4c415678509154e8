using System.Security.Cryptography;
using System.Threading.Channels;
using Google.Protobuf;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>
/// The serving side of a state transfer, at a replica that has the state. At a view with members that lack the state
/// and that no capture it holds covers, it captures the state (every replica that has the state does, at the same
/// point of the order, so any of them can serve the same snapshot later); the oldest such replica offers its captures,
/// and answers chunk requests one at a time, off the machine's loop. A capture is kept until every member it was taken
/// for has the state or left.
/// </summary>
internal sealed partial class SnapshotServer(string machine, Lock gate, Func<LightMemberId, RsmMessage, CancellationToken, Task> send, ILogger? logger) : IAsyncDisposable
{
    private readonly CancellationTokenSource _stopping = new();
    private readonly List<Capture> _captures = [];
    private readonly Channel<(LightMemberId To, RsmChunkRequest Request)> _requests = Channel.CreateUnbounded<(LightMemberId, RsmChunkRequest)>(new UnboundedChannelOptions { SingleReader = true });
    private readonly ILogger _logger = logger ?? NullLogger.Instance;
    private Task? _serving;

    /// <summary>Captures held, for tests and diagnostics (under the machine's lock).</summary>
    public int CaptureCount => _captures.Count;

    /// <summary>
    /// At a view installed while this replica has the state (under the machine's lock): releases captures nobody waits
    /// for, captures the state if a member that lacks it is not covered, and returns the offers to send if this
    /// replica serves.
    /// </summary>
    public List<(LightMemberId To, RsmSnapshotOffer Offer)> OnView(long viewId, IReadOnlyCollection<LightMemberId> lacking, Func<IStateSnapshot> capture, bool serves, IEnumerable<string> synced)
    {
        foreach (var held in _captures)
        {
            held.Waiting.IntersectWith(lacking);
        }

        Release(c => c.Waiting.Count == 0);
        if (lacking.Any(m => !_captures.Any(c => c.Waiting.Contains(m))))
        {
            var snapshot = capture();
            _captures.Add(new Capture(viewId, snapshot, [.. lacking]));
            LogCaptured(machine, viewId, snapshot.Length, lacking.Count);
        }

        if (!serves)
        {
            return [];
        }

        var known = synced.ToArray();
        return [.. lacking.Select(m =>
        {
            var offer = new RsmSnapshotOffer();
            offer.Captures.AddRange(_captures.Where(c => c.Waiting.Contains(m)).Select(c => new RsmCaptureInfo { TakenInView = c.View, Length = c.Snapshot.Length }));
            offer.Synced.AddRange(known);
            return (m, offer);
        })];
    }

    /// <summary>Whether <see cref="OnView"/> with these members lacking the state would capture it (under the machine's lock).</summary>
    public bool NeedsCapture(IReadOnlyCollection<LightMemberId> lacking) => lacking.Any(m => !_captures.Any(c => c.Waiting.Contains(m)));

    /// <summary>A member announced it has the state (under the machine's lock).</summary>
    public void OnSynced(string member)
    {
        foreach (var held in _captures)
        {
            held.Waiting.RemoveWhere(m => m.ToString() == member);
        }

        Release(c => c.Waiting.Count == 0);
    }

    /// <summary>Drops every capture: this replica no longer has the state (under the machine's lock).</summary>
    public void Clear() => Release(_ => true);

    /// <summary>Queues a chunk request to be answered off the loop.</summary>
    public void OnRequest(LightMemberId from, RsmChunkRequest request)
    {
        _requests.Writer.TryWrite((from, request));
        _serving ??= Task.Run(ServeAsync);
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        // Before the member goes: a send in progress is abandoned, queued requests are dropped.
        await _stopping.CancelAsync();
        _requests.Writer.TryComplete();
        if (_serving is not null)
        {
            await _serving;
        }

        _stopping.Dispose();

        lock (gate)
        {
            Clear();
        }
    }

    private void Release(Predicate<Capture> which)
    {
        foreach (var held in _captures.Where(c => which(c)).ToList())
        {
            _captures.Remove(held);
            held.Released = true;
            if (held.InUse == 0)
            {
                held.Snapshot.Dispose();
            }
        }
    }

    private async Task ServeAsync()
    {
        await foreach (var (to, request) in _requests.Reader.ReadAllAsync())
        {
            if (_stopping.IsCancellationRequested)
            {
                continue;
            }

            Capture? held;
            lock (gate)
            {
                held = _captures.FirstOrDefault(c => c.View == request.TakenInView);
                if (held is not null)
                {
                    held.InUse++;
                }
            }

            if (held is null)
            {
                // Released: the member has the state or left; a member still waiting gets a fresh offer at the next view.
                continue;
            }

            try
            {
                await SendChunkAsync(to, request, held);
            }
            catch (GroupUnavailableException)
            {
                // The member left or this replica is rejoining; the next view settles who serves whom.
            }
            catch (OperationCanceledException) when (_stopping.IsCancellationRequested)
            {
                // This replica is leaving.
            }
            finally
            {
                lock (gate)
                {
                    held.InUse--;
                    if (held.Released && held.InUse == 0)
                    {
                        held.Snapshot.Dispose();
                    }
                }
            }
        }
    }

    private async Task SendChunkAsync(LightMemberId to, RsmChunkRequest request, Capture held)
    {
        var chunk = new RsmSnapshotChunk { TakenInView = held.View, Offset = request.Offset };
        if (!request.PrefixHash.IsEmpty && !PrefixMatches(held.Snapshot, request.Offset, request.PrefixHash.Span))
        {
            chunk.Restart = true;
            await send(to, new RsmMessage { Snapshot = chunk }, _stopping.Token);
            return;
        }

        var length = (int)Math.Clamp(Math.Min(request.Length, held.Snapshot.Length - request.Offset), 0, 16 * 1024 * 1024);
        var buffer = new byte[length];
        var read = held.Snapshot.Read(request.Offset, buffer);
        chunk.Data = UnsafeByteOperations.UnsafeWrap(buffer.AsMemory(0, read));
        if (request.Offset == 0 || !request.PrefixHash.IsEmpty)
        {
            LogServing(machine, held.View, request.Offset, held.Snapshot.Length, to.ToString());
        }

        await send(to, new RsmMessage { Snapshot = chunk }, _stopping.Token);
        StateTransferMetrics.BytesSent.Add(read, new KeyValuePair<string, object?>("machine", machine));
    }

    private static bool PrefixMatches(IStateSnapshot snapshot, long offset, ReadOnlySpan<byte> expected)
    {
        if (offset > snapshot.Length)
        {
            return false;
        }

        using var hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        var buffer = new byte[1 << 20];
        for (long at = 0; at < offset;)
        {
            var read = snapshot.Read(at, buffer.AsSpan(0, (int)Math.Min(buffer.Length, offset - at)));
            if (read == 0)
            {
                return false;
            }

            hash.AppendData(buffer, 0, read);
            at += read;
        }

        return hash.GetCurrentHash().AsSpan().SequenceEqual(expected);
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "State transfer of '{Machine}': captured the state at view {View} ({Length} bytes) for {Lacking} member(s) that lack it")]
    private partial void LogCaptured(string machine, long view, long length, int lacking);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': serving the snapshot of view {View} from {Offset} of {Length} bytes to {Member}")]
    private partial void LogServing(string machine, long view, long offset, long length, string member);

    private sealed class Capture(long view, IStateSnapshot snapshot, HashSet<LightMemberId> waiting)
    {
        public long View { get; } = view;

        public IStateSnapshot Snapshot { get; } = snapshot;

        public HashSet<LightMemberId> Waiting { get; } = waiting;

        public int InUse { get; set; }

        public bool Released { get; set; }
    }
}
