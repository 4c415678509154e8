
namespace Quintet.Manager.Lifetime;

/// <summary>The exit code the process will return when the host stops; set by whatever decided to stop it.</summary>
internal sealed class ManagerExitStatus
{
    private int _exitCode = ManagerExitCode.Stopped;

    public int ExitCode => Volatile.Read(ref _exitCode);

    public void Set(int exitCode) => Interlocked.CompareExchange(ref _exitCode, exitCode, ManagerExitCode.Stopped);
}
