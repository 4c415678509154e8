using Microsoft.Extensions.Logging;

namespace Quintet.Persistence.Replication;

/// <summary>The compaction of the replica's file: rewritten with only the records its index still needs.</summary>
public sealed partial class ReplicaStore
{
    /// <summary>Rewrites the file with only the records the index still needs, once the others outweigh them.</summary>
    private void CompactIfWorthIt()
    {
        var end = _file.End;
        if (end < _compactionBytes || end < _nextCompactionCheck)
        {
            return;
        }

        var live = new List<Located>();
        var liveBytes = 0L;
        foreach (var stream in _streams.Values)
        {
            if (stream.StateRecord is { } state)
            {
                live.Add(state);
            }

            live.AddRange(stream.Entries);
        }

        live.AddRange(_managers.Values);

        foreach (var record in live)
        {
            liveBytes += record.Length;
        }

        var dead = end - liveBytes;
        if (dead < _compactionBytes || dead < liveBytes)
        {
            // Check again once the file has grown by as much as it holds dead now, not after every commit.
            _nextCompactionCheck = end + Math.Max(_compactionBytes - dead, liveBytes - dead);
            return;
        }

        live.Sort(static (a, b) => a.Offset.CompareTo(b.Offset));
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        StreamLogFile.Rewritten rewritten;
        try
        {
            rewritten = _file.Rewrite(live.ConvertAll(l => (l.Offset, l.Length)));
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            _nextCompactionCheck = end + _compactionBytes;
            LogCompactionFailed(_logger, e, Path);
            return;
        }

        for (var i = 0; i < live.Count; i++)
        {
            live[i].Place(rewritten.Offsets[i]);
        }

        rewritten.Switch();
        Interlocked.Increment(ref _compactions);
        LogCompacted(_logger, Path, end, _file.End, System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalMilliseconds);
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Compacting the replica {Path} failed; it goes on with the file as it is")]
    private static partial void LogCompactionFailed(ILogger logger, Exception exception, string path);

    [LoggerMessage(Level = LogLevel.Information, Message = "Compacted the replica {Path} from {Before} to {After} bytes in {Milliseconds:F0} ms")]
    private static partial void LogCompacted(ILogger logger, string path, long before, long after, double milliseconds);
}
