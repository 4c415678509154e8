namespace Quintet.Manager.Health;

/// <summary>One warning or error this manager logged.</summary>
internal sealed record RecentLogEntry(DateTimeOffset Time, LogLevel Level, string Category, int EventId, string Message, string? ExceptionType, string? ExceptionMessage);

/// <summary>
/// The manager's recent warnings and errors, in a ring of <see cref="Capacity"/> entries kept in memory, so that an
/// administrator can see why a manager is unhappy without its log files (<c>quintet cluster log</c>). A logger provider:
/// its loggers are enabled for warnings and above alone, so that everything below costs one comparison, and a warning
/// costs a short lock (warnings are rare: a manager that logs thousands a second has other troubles).
/// </summary>
internal sealed class RecentLogEntries(TimeProvider time) : ILoggerProvider
{
    /// <summary>Entries kept; the oldest goes when a new one comes.</summary>
    public const int Capacity = 500;

    private readonly Lock _gate = new();
    private readonly RecentLogEntry[] _ring = new RecentLogEntry[Capacity];
    private long _written;

    /// <summary>Entries let go since the manager started.</summary>
    public long Dropped
    {
        get
        {
            lock (_gate)
            {
                return Math.Max(0, _written - Capacity);
            }
        }
    }

    /// <summary>The entries at <paramref name="minimum"/> or above, newest first, at most <paramref name="limit"/>.</summary>
    public IReadOnlyList<RecentLogEntry> Newest(LogLevel minimum, int limit)
    {
        var found = new List<RecentLogEntry>();
        lock (_gate)
        {
            for (var i = _written - 1; i >= 0 && i >= _written - Capacity && found.Count < limit; i--)
            {
                var entry = _ring[i % Capacity];
                if (entry.Level >= minimum)
                {
                    found.Add(entry);
                }
            }
        }

        return found;
    }

    public ILogger CreateLogger(string categoryName) => new RingLogger(this, categoryName);

    public void Dispose()
    {
    }

    private void Add(RecentLogEntry entry)
    {
        lock (_gate)
        {
            _ring[_written % Capacity] = entry;
            _written++;
        }
    }

    private sealed class RingLogger(RecentLogEntries ring, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel is >= LogLevel.Warning and < LogLevel.None;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (!IsEnabled(logLevel))
            {
                return;
            }

            ArgumentNullException.ThrowIfNull(formatter);
            ring.Add(new RecentLogEntry(ring.Now, logLevel, category, eventId.Id, formatter(state, exception), exception?.GetType().FullName, exception?.Message));
        }
    }

    private DateTimeOffset Now => time.GetUtcNow();
}
