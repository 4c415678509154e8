namespace Quintet.Manager.Extensions;

/// <summary>
/// The observers of one kind that extensions registered (calls, instances). With none, the array is null and a notice
/// costs its caller one volatile read; observers are added and removed by copying it, so a notice never takes a lock.
/// An observer that throws is removed, and logged once at warning level; what it was told of goes on as if it had not
/// been there.
/// </summary>
internal abstract partial class ExtensionObservers<TObserver>(ILogger logger, string kind)
    where TObserver : class
{
    private readonly Lock _gate = new();
    private volatile Registration[]? _registrations;

    /// <summary>Tells one observer of one notice.</summary>
    protected delegate void Tell<TNotice>(TObserver observer, in TNotice notice);

    /// <summary>Whether any observer is registered: the path that notifies checks it before it describes anything.</summary>
    public bool Active => _registrations is not null;

    /// <summary>The observers registered now.</summary>
    public int Count => _registrations?.Length ?? 0;

    /// <summary>Registers <paramref name="observer"/> for the extension <paramref name="owner"/>; disposing the result removes it.</summary>
    public IDisposable Add(TObserver observer, string owner)
    {
        ArgumentNullException.ThrowIfNull(observer);
        var registration = new Registration(this, observer, owner);
        lock (_gate)
        {
            _registrations = [.. _registrations ?? [], registration];
        }

        return registration;
    }

    /// <summary>Tells every observer of <paramref name="notice"/>; never throws. <paramref name="describe"/> names it in the log of a removal.</summary>
    protected void Notify<TNotice>(in TNotice notice, Tell<TNotice> tell, Func<TNotice, string> describe)
    {
        var registrations = _registrations;
        if (registrations is null)
        {
            return;
        }

        foreach (var registration in registrations)
        {
            try
            {
                tell(registration.Observer, notice);
            }
            catch (Exception e)
            {
                if (Remove(registration))
                {
                    LogObserverRemoved(logger, kind, registration.Observer.GetType().FullName, registration.Owner, describe(notice), e);
                }
            }
        }
    }

    /// <summary>Removes a registration; true when it was there (so that only one caller logs its removal).</summary>
    private bool Remove(Registration registration)
    {
        lock (_gate)
        {
            var current = _registrations;
            if (current is null || Array.IndexOf(current, registration) < 0)
            {
                return false;
            }

            _registrations = current.Length == 1 ? null : [.. current.Where(r => r != registration)];
            return true;
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The {Kind} observer {Observer} of extension {Extension} threw on {Notice} and was removed; that was not affected")]
    private static partial void LogObserverRemoved(ILogger logger, string kind, string? observer, string extension, string notice, Exception exception);

    private sealed class Registration(ExtensionObservers<TObserver> owner, TObserver observer, string extension) : IDisposable
    {
        public TObserver Observer { get; } = observer;

        public string Owner { get; } = extension;

        public void Dispose() => owner.Remove(this);
    }
}
