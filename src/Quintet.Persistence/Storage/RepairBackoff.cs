namespace Quintet.Persistence.Storage;

/// <summary>
/// The pace of attempts to repair a file a failed write broke: the first attempt is due <see cref="BaseDelay"/> after
/// the failure, and each later one twice as long after the attempt before it, up to twelve times the base, so that a
/// disk that stays full or failing is not hammered. Used by one thread at a time; times are
/// <see cref="Environment.TickCount64"/> milliseconds.
/// </summary>
public sealed class RepairBackoff(TimeSpan baseDelay, long failedAt)
{
    /// <summary>The delay before the first attempt.</summary>
    public TimeSpan BaseDelay { get; } = baseDelay;

    /// <summary>The delay before the next attempt.</summary>
    public TimeSpan Delay { get; private set; } = baseDelay;

    /// <summary>When the next attempt is due.</summary>
    public long DueAt { get; private set; } = failedAt + (long)baseDelay.TotalMilliseconds;

    /// <summary>True when an attempt is due at <paramref name="now"/>.</summary>
    public bool IsDue(long now) => now >= DueAt;

    /// <summary>An attempt was made (or failed) at <paramref name="now"/>: the next waits twice as long.</summary>
    public void Attempted(long now)
    {
        Delay = TimeSpan.FromTicks(Math.Min(Delay.Ticks * 2, BaseDelay.Ticks * 12));
        DueAt = now + Math.Max(1, (long)Delay.TotalMilliseconds);
    }
}
