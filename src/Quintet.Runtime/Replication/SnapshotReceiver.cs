using System.Diagnostics;
using System.Security.Cryptography;
using Google.Protobuf;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

/// <summary>
/// The joining side of a state transfer: pulls chunks of one snapshot from the replica that offered it, at most
/// <see cref="ReplicatedStateMachineOptions.Window"/> at a time, keeps them in order in a spool (memory or a temporary
/// file) with a running hash, and continues from the bytes it holds when another replica offers the same snapshot.
/// Runs on the machine's loop only.
/// </summary>
internal sealed partial class SnapshotReceiver(string machine, ReplicatedStateMachineOptions options, Func<LightMemberId, RsmMessage, Task> send) : IDisposable
{
    private readonly Dictionary<long, ByteString> _ahead = [];
    private readonly ILogger _logger = options.Logger ?? NullLogger.Instance;
    private IncrementalHash? _hash;
    private Stream? _spool;
    private LightMemberId? _source;
    private long _view = -1;
    private long _length;
    private long _received;
    private long _nextRequest;
    private long _resumeOffset;
    private bool _verifying;
    private bool _resumed;
    private int _loggedTenths;
    private long _started;
    private long _lastProgress = Environment.TickCount64;

    /// <summary>When an offer or a chunk last arrived (<see cref="Environment.TickCount64"/>).</summary>
    public long LastProgress => Volatile.Read(ref _lastProgress);

    /// <summary>Bytes held and the snapshot's size, for messages; (0, -1) before an offer.</summary>
    public (long Received, long Total) Position => (Volatile.Read(ref _received), _view < 0 ? -1 : _length);

    /// <summary>The view the snapshot being received was captured in; -1 before an offer.</summary>
    public long View => _view;

    /// <summary>Takes an offer; returns true if the snapshot is already complete (it is empty).</summary>
    public bool OnOffer(LightMemberId from, RsmSnapshotOffer offer)
    {
        Touch();
        if (offer.Captures.Count == 0)
        {
            return false;
        }

        var same = _view < 0 ? null : offer.Captures.FirstOrDefault(c => c.TakenInView == _view && c.Length == _length);
        if (same is not null)
        {
            // Chunks asked of the previous server, or of this one in the previous view, may never come: ask again.
            _ahead.Clear();
            _nextRequest = _received;
            if (_source != from && _received > 0)
            {
                _verifying = true;
                _resumeOffset = _received;
                LogResuming(machine, _view, _received, _length, from.ToString());
            }

            _source = from;
            Fill();
            return false;
        }

        var newest = offer.Captures.MaxBy(c => c.TakenInView)!;
        if (_view >= 0 && _received > 0)
        {
            StateTransferMetrics.Restarted.Add(1, Tag);
            LogStartingOver(machine, _view, _received, newest.TakenInView, from.ToString());
        }

        Begin(from, newest.TakenInView, newest.Length);
        if (_length == 0)
        {
            return true;
        }

        Fill();
        return false;
    }

    /// <summary>Takes a chunk; returns true once the whole snapshot is held.</summary>
    public bool OnChunk(LightMemberId from, RsmSnapshotChunk chunk)
    {
        if (from != _source || chunk.TakenInView != _view || _spool is null)
        {
            // From a server this replica moved away from: its chunks may still be on the way.
            return false;
        }

        Touch();
        if (chunk.Restart)
        {
            StateTransferMetrics.Restarted.Add(1, Tag);
            LogPrefixDiffers(machine, _view, _received, from.ToString());
            Begin(from, _view, _length);
            Fill();
            return false;
        }

        if (chunk.Offset < _received || chunk.Offset >= _nextRequest)
        {
            return false;
        }

        if (chunk.Offset > _received)
        {
            _ahead[chunk.Offset] = chunk.Data;
            return false;
        }

        Append(chunk.Data);
        while (_ahead.Remove(_received, out var next))
        {
            Append(next);
        }

        if (_verifying)
        {
            _verifying = false;
            _resumed = true;
            StateTransferMetrics.Resumed.Add(1, Tag);
            LogResumed(machine, _view, _resumeOffset, from.ToString());
        }

        Report(completed: false);
        if (_received >= _length)
        {
            return true;
        }

        Fill();
        return false;
    }

    /// <summary>The whole snapshot, positioned at its start; the caller disposes it. Reports completion.</summary>
    public Stream TakeCompleted()
    {
        var spool = _spool ?? new MemoryStream();
        _spool = null;
        spool.Position = 0;
        StateTransferMetrics.Duration.Record(Stopwatch.GetElapsedTime(_started).TotalSeconds, Tag);
        Report(completed: true);
        LogCompleted(machine, _view, _length, Stopwatch.GetElapsedTime(_started).TotalSeconds, _resumed);
        Forget();
        return spool;
    }

    /// <summary>Drops what was received (the member is rejoining as a new one, or leaving).</summary>
    public void Dispose()
    {
        if (_view >= 0)
        {
            StateTransferMetrics.BytesRemaining.Add(-(_length - _received), Tag);
        }

        _spool?.Dispose();
        _spool = null;
        Forget();
    }

    private KeyValuePair<string, object?> Tag => new("machine", machine);

    private void Forget()
    {
        _hash?.Dispose();
        _hash = null;
        _ahead.Clear();
        _view = -1;
        _source = null;
        _received = _nextRequest = _length = 0;
        _verifying = false;
    }

    private void Begin(LightMemberId from, long view, long length)
    {
        if (_view >= 0)
        {
            StateTransferMetrics.BytesRemaining.Add(-(_length - _received), Tag);
        }
        else
        {
            _started = Stopwatch.GetTimestamp();
            LogStarting(machine, view, length, from.ToString());
        }

        _spool?.Dispose();
        _hash?.Dispose();
        _spool = length <= options.InMemoryTransferBytes
            ? new MemoryStream()
            : new FileStream(
                Path.Combine(options.SpoolDirectory ?? Path.GetTempPath(), $"quintet-transfer-{Guid.NewGuid():N}.tmp"),
                FileMode.CreateNew,
                FileAccess.ReadWrite,
                FileShare.None,
                bufferSize: 1 << 16,
                FileOptions.DeleteOnClose);
        _hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        _ahead.Clear();
        _source = from;
        _view = view;
        _length = length;
        _received = _nextRequest = 0;
        _verifying = false;
        _loggedTenths = 0;
        StateTransferMetrics.BytesRemaining.Add(length, Tag);
        Report(completed: false);
    }

    private void Fill()
    {
        var window = (long)options.Window * options.ChunkBytes;
        while (_nextRequest < _length && _nextRequest - _received < window)
        {
            var length = (int)Math.Min(options.ChunkBytes, _length - _nextRequest);
            var request = new RsmChunkRequest { TakenInView = _view, Offset = _nextRequest, Length = length };
            if (_verifying)
            {
                // One request only until the new server confirms it holds the same bytes.
                if (_nextRequest != _received)
                {
                    return;
                }

                request.PrefixHash = ByteString.CopyFrom(_hash!.GetCurrentHash());
            }

            _nextRequest += length;
            _ = SendAsync(_source!.Value, new RsmMessage { Request = request });
        }
    }

    private async Task SendAsync(LightMemberId to, RsmMessage message)
    {
        try
        {
            await send(to, message);
        }
        catch (Core.Groups.GroupUnavailableException)
        {
            // The server failed or the view changes: the next view's offer asks again.
        }
        catch (OperationCanceledException)
        {
            // This replica is leaving.
        }
    }

    private void Append(ByteString data)
    {
        _spool!.Write(data.Span);
        _hash!.AppendData(data.Span);
        Volatile.Write(ref _received, _received + data.Length);
        StateTransferMetrics.BytesReceived.Add(data.Length, Tag);
        StateTransferMetrics.BytesRemaining.Add(-data.Length, Tag);
    }

    private void Report(bool completed)
    {
        options.Progress?.Report(new StateTransferProgress(machine, _view, _received, _length, _resumed, completed));
        var tenths = _length == 0 ? 10 : (int)(_received * 10 / _length);
        if (!completed && tenths > _loggedTenths)
        {
            _loggedTenths = tenths;
            LogProgress(machine, _view, _received, _length);
        }
    }

    private void Touch() => Volatile.Write(ref _lastProgress, Environment.TickCount64);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': receiving the snapshot of view {View} ({Total} bytes) from {Server}")]
    private partial void LogStarting(string machine, long view, long total, string server);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': {Received} of {Total} bytes of the snapshot of view {View}")]
    private partial void LogProgress(string machine, long view, long received, long total);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': asking {Server} to continue the snapshot of view {View} at {Received} of {Total} bytes")]
    private partial void LogResuming(string machine, long view, long received, long total, string server);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': {Server} continues the snapshot of view {View} from {Offset} bytes")]
    private partial void LogResumed(string machine, long view, long offset, string server);

    [LoggerMessage(Level = LogLevel.Warning, Message = "State transfer of '{Machine}': {Server} holds no copy of the snapshot of view {View} ({Received} bytes received); starting over with its snapshot of view {NewView}")]
    private partial void LogStartingOver(string machine, long view, long received, long newView, string server);

    [LoggerMessage(Level = LogLevel.Warning, Message = "State transfer of '{Machine}': the snapshot of view {View} at {Server} differs in its first {Received} bytes; starting over")]
    private partial void LogPrefixDiffers(string machine, long view, long received, string server);

    [LoggerMessage(Level = LogLevel.Information, Message = "State transfer of '{Machine}': the snapshot of view {View} ({Total} bytes) arrived in {Seconds:F1} s (resumed: {Resumed})")]
    private partial void LogCompleted(string machine, long view, long total, double seconds, bool resumed);
}
