using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace Quintet.Benchmarks;

/// <summary>
/// A peer server (redis-server, etcd) started by the benchmark with its output in a log file, and stopped by its pid:
/// SIGTERM, then SIGKILL if it has not exited within a few seconds.
/// </summary>
internal sealed class PeerProcess : IAsyncDisposable
{
    private readonly Process _process;

    private PeerProcess(Process process, string name, string logFile)
    {
        _process = process;
        Name = name;
        LogFile = logFile;
    }

    public string Name { get; }

    public string LogFile { get; }

    public int ProcessId => _process.Id;

    public bool HasExited => _process.HasExited;

    public static PeerProcess Start(string name, string fileName, IReadOnlyList<string> arguments, string logFile)
    {
        // The shell execs into the program: the pid is the server's own and its output goes straight to the file.
        var info = new ProcessStartInfo("/bin/sh") { UseShellExecute = false };
        info.ArgumentList.Add("-c");
        info.ArgumentList.Add("exec \"$@\" >> \"$PEER_LOG\" 2>&1 < /dev/null");
        info.ArgumentList.Add("sh");
        info.ArgumentList.Add(fileName);
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        info.Environment["PEER_LOG"] = logFile;
        var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {fileName}.");
        return new PeerProcess(process, name, logFile);
    }

    /// <summary>The last lines of the peer's log, for an error message.</summary>
    public string TailLog(int lines = 15) =>
        File.Exists(LogFile) ? string.Join('\n', File.ReadLines(LogFile).TakeLast(lines)) : "(no log)";

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            Signals.Terminate(_process.Id);
            using var grace = new CancellationTokenSource(TimeSpan.FromSeconds(5));
            try
            {
                await _process.WaitForExitAsync(grace.Token);
            }
            catch (OperationCanceledException)
            {
                _process.Kill();
                await _process.WaitForExitAsync(CancellationToken.None);
            }
        }

        _process.Dispose();
    }

    /// <summary>A loopback port free at the time of asking.</summary>
    public static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }
}
