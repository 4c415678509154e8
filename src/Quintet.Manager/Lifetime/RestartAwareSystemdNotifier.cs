using Microsoft.Extensions.Hosting.Systemd;

namespace Quintet.Manager.Lifetime;

/// <summary>
/// Tells systemd of a restart in process as a reload (RELOADING=1, then the next run's READY=1), not as the stop the
/// run's lifetime announces as it ends: after STOPPING=1 systemd would wait for the process to exit and then kill it.
/// </summary>
internal sealed class RestartAwareSystemdNotifier(ISystemdNotifier inner, ManagerRestarts restarts) : ISystemdNotifier
{
    public bool IsEnabled => inner.IsEnabled;

    public void Notify(ServiceState state)
    {
        if (restarts.Requested && state.ToString() == ServiceState.Stopping.ToString())
        {
            var now = System.Diagnostics.Stopwatch.GetTimestamp() * 1_000_000 / System.Diagnostics.Stopwatch.Frequency;
            inner.Notify(new ServiceState($"RELOADING=1\nMONOTONIC_USEC={now}"));
            return;
        }

        inner.Notify(state);
    }
}
