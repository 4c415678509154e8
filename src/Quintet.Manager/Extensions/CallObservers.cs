using Quintet.Extensions;

namespace Quintet.Manager.Extensions;

/// <summary>
/// The extensions' call observers (<see cref="IManagerExtensionContext.ObserveCalls"/>), told of every call this
/// manager serves as an instance's owner or live active replica: the calls <see cref="Invocation.CallStatistics"/>
/// counts, and those of load-balanced active replicas. With none, the array is null and a call pays one volatile read;
/// observers are added and removed by copying it, so a call never takes a lock. An observer that throws is removed, and
/// logged once at warning level; the call goes on as if it had not been there.
/// </summary>
internal sealed partial class CallObservers(ILogger<CallObservers> logger)
{
    private readonly Lock _gate = new();
    private volatile Registration[]? _registrations;

    /// <summary>Whether any observer is registered: the call path checks it before it describes the call.</summary>
    public bool Active => _registrations is not null;

    /// <summary>The observers registered now.</summary>
    public int Count => _registrations?.Length ?? 0;

    /// <summary>Registers <paramref name="observer"/> for the extension <paramref name="owner"/>; disposing the result removes it.</summary>
    public IDisposable Add(ICallObserver observer, string owner)
    {
        ArgumentNullException.ThrowIfNull(observer);
        var registration = new Registration(this, observer, owner);
        lock (_gate)
        {
            _registrations = [.. _registrations ?? [], registration];
        }

        return registration;
    }

    /// <summary>Tells every observer of a completed call; never throws.</summary>
    public void Notify(in CompletedCall call)
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
                registration.Observer.OnCallCompleted(call);
            }
            catch (Exception e)
            {
                if (Remove(registration))
                {
                    LogObserverRemoved(logger, registration.Owner, registration.Observer.GetType().FullName, $"{call.Service}/{call.Operation}", e);
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

    [LoggerMessage(Level = LogLevel.Warning, Message = "The call observer {Observer} of extension {Extension} threw on a call to {Call} and was removed; the call was not affected")]
    private static partial void LogObserverRemoved(ILogger logger, string extension, string? observer, string call, Exception exception);

    private sealed class Registration(CallObservers owner, ICallObserver observer, string extension) : IDisposable
    {
        public ICallObserver Observer { get; } = observer;

        public string Owner { get; } = extension;

        public void Dispose() => owner.Remove(this);
    }
}
