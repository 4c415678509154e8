using System.Diagnostics;

namespace Quintet.TestingHost;

/// <summary>Starts a process with its output appended to a file.</summary>
internal static class ProcessLauncher
{
    public static Process Start(string fileName, IReadOnlyList<string> arguments, string logFile)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(logFile)!);
        ProcessStartInfo info;
        if (OperatingSystem.IsWindows())
        {
            info = new ProcessStartInfo(fileName) { RedirectStandardOutput = true, RedirectStandardError = true };
        }
        else
        {
            // The shell execs into the program, so the pid is the program's own and its output goes straight to the
            // file: no pipe that dies with this process, no pump to keep alive.
            info = new ProcessStartInfo("/bin/sh");
            info.ArgumentList.Add("-c");
            info.ArgumentList.Add("exec \"$@\" >> \"$QUINTET_PROCESS_LOG\" 2>&1 < /dev/null");
            info.ArgumentList.Add("sh");
            info.ArgumentList.Add(fileName);
            info.Environment["QUINTET_PROCESS_LOG"] = logFile;
        }

        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        info.UseShellExecute = false;
        info.Environment["DOTNET_NOLOGO"] = "1";
        var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {fileName}.");
        if (OperatingSystem.IsWindows())
        {
            var log = new StreamWriter(new FileStream(logFile, FileMode.Append, FileAccess.Write, FileShare.ReadWrite)) { AutoFlush = true };
            var gate = new object();
            void Write(object? sender, DataReceivedEventArgs e)
            {
                if (e.Data is null)
                {
                    return;
                }

                lock (gate)
                {
                    log.WriteLine(e.Data);
                }
            }

            process.OutputDataReceived += Write;
            process.ErrorDataReceived += Write;
            process.Exited += (_, _) => log.Dispose();
            process.EnableRaisingEvents = true;
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
        }

        return process;
    }
}
