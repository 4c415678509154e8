using System.Runtime.InteropServices;

namespace Quintet.TestingHost;

/// <summary>Sends POSIX signals to a process: what <see cref="System.Diagnostics.Process"/> does not offer.</summary>
internal static partial class UnixSignals
{
    public const int SigTerm = 15;
    public const int SigStop = 19;
    public const int SigCont = 18;

    public static void Send(int processId, int signal)
    {
        if (!OperatingSystem.IsLinux() && !OperatingSystem.IsMacOS() && !OperatingSystem.IsFreeBSD())
        {
            throw new PlatformNotSupportedException("Pausing and resuming managers needs POSIX signals (Linux or macOS).");
        }

        // SIGSTOP and SIGCONT have other numbers on macOS and BSD.
        var native = OperatingSystem.IsLinux() ? signal : signal switch
        {
            SigStop => 17,
            SigCont => 19,
            _ => signal,
        };
        if (Kill(processId, native) != 0)
        {
            throw new InvalidOperationException($"Could not send signal {signal} to process {processId}: errno {Marshal.GetLastPInvokeError()}.");
        }
    }

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int Kill(int pid, int sig);
}
