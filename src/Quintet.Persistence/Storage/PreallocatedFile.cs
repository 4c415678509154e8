namespace Quintet.Persistence.Storage;

/// <summary>
/// The growth rule of Quintet's append-only files: the file grows by zero-filled steps made durable once, so that a
/// commit writes in place and syncs its data alone (<see cref="DiskSync.FlushData"/>). An fsync of a file that grew also
/// commits the file system's journal, which costs more than the write itself. Zeros end the records on recovery: every
/// format that uses this rule makes an all-zero header fail its check.
/// </summary>
public static class PreallocatedFile
{
    /// <summary>The step a file grows by, past what a commit needs.</summary>
    public const int StepBytes = 1024 * 1024;

    /// <summary>
    /// Makes the file at least <paramref name="end"/> plus one step long, zero-filled past its current length, and the
    /// new size durable (a full fsync, once per step); nothing happens while half a step or more is left past
    /// <paramref name="end"/>. Returns the file's length; the stream's position is kept.
    /// </summary>
    public static long Extend(FileStream file, long end)
    {
        var length = file.Length;
        if (length >= end + (StepBytes / 2))
        {
            return length;
        }

        var target = end + StepBytes;
        var position = file.Position;
        file.Position = length;
        var zeros = new byte[64 * 1024];
        for (var at = length; at < target; at += zeros.Length)
        {
            file.Write(zeros, 0, (int)Math.Min(zeros.Length, target - at));
        }

        file.Flush(flushToDisk: true);
        file.Position = position;
        return target;
    }

    /// <summary>True when everything from <paramref name="offset"/> to the end is zero: space grown ahead, not a torn write.</summary>
    public static bool IsZeroFrom(FileStream file, long offset)
    {
        var buffer = new byte[64 * 1024];
        file.Position = offset;
        int read;
        while ((read = file.Read(buffer)) > 0)
        {
            if (buffer.AsSpan(0, read).ContainsAnyExcept((byte)0))
            {
                return false;
            }
        }

        return true;
    }
}
