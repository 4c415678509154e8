using System.Runtime.InteropServices;

namespace Quintet.Benchmarks;

/// <summary>SIGTERM by pid: <see cref="System.Diagnostics.Process.Kill()"/> sends SIGKILL only.</summary>
internal static partial class Signals
{
    private const int SigTerm = 15;

    public static void Terminate(int processId) => _ = Kill(processId, SigTerm);

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int Kill(int pid, int signal);
}
