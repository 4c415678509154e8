using System.Diagnostics;
using System.Globalization;
using Quintet.TestingHost;

namespace Quintet.Benchmarks;

/// <summary>
/// A JGroups group of <c>members</c> Java processes on loopback (Debian's <c>libjgroups-java</c>, 2.12): the peer of the
/// managers group in the multicast benchmark. Each member runs <c>jgroups/JGroupsMember.java</c>, compiled here with
/// <c>javac</c>, over JGroups' own TCP stack (<c>jgroups/tcp-sequencer.xml</c>), with its SEQUENCER protocol for total
/// order or without it. The members are driven line by line on their standard input and stopped by their pids.
/// </summary>
internal sealed class JGroupsPeer : IAsyncDisposable
{
    private const string JGroupsJar = "/usr/share/java/jgroups.jar";
    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(120);
    private readonly List<Member> _members;

    private JGroupsPeer(List<Member> members) => _members = members;

    /// <summary>
    /// Installs JGroups and a JDK when missing and compiles the member into <paramref name="folder"/>; null when it
    /// worked, else why not (the benchmark then prints empty JGroups columns).
    /// </summary>
    public static async Task<string?> PrepareAsync(string folder)
    {
        try
        {
            await DebianPackages.EnsureAsync(ChildProgram.FindOnPath("javac") is null ? ["libjgroups-java", "default-jdk-headless"] : ["libjgroups-java"]);
        }
        catch (InvalidOperationException e)
        {
            return e.Message;
        }

        Directory.CreateDirectory(folder);
        var source = Path.Combine(AppContext.BaseDirectory, "jgroups", "JGroupsMember.java");
        var (code, output, error) = await ChildProgram.RunAsync("javac", ["-cp", JGroupsJar, "-d", folder, source], TimeSpan.FromMinutes(2));
        return code == 0 ? null : $"javac failed with exit code {code}: {(output + error).Trim()}";
    }

    /// <summary>Starts <paramref name="members"/> members in <paramref name="folder"/> (compiled by <see cref="PrepareAsync"/>) and waits until each sees all.</summary>
    public static async Task<JGroupsPeer> StartAsync(string folder, int members, bool totalOrder)
    {
        var stack = await File.ReadAllTextAsync(Path.Combine(AppContext.BaseDirectory, "jgroups", "tcp-sequencer.xml"));
        if (!totalOrder)
        {
            stack = stack.Replace("<SEQUENCER/>", string.Empty, StringComparison.Ordinal);
        }

        var stackFile = Path.Combine(folder, totalOrder ? "stack-total.xml" : "stack-atomic.xml");
        await File.WriteAllTextAsync(stackFile, stack);
        var ports = Enumerable.Range(0, members).Select(_ => PeerProcess.FreePort()).ToList();
        var hosts = string.Join(',', ports.Select(p => $"127.0.0.1[{p}]"));
        var group = $"quintet-bench-{Environment.ProcessId}-{(totalOrder ? "total" : "atomic")}-{members}";
        var started = new List<Member>();
        try
        {
            for (var i = 0; i < members; i++)
            {
                started.Add(Member.Start(folder, stackFile, group, members, i, ports[i], hosts));
            }

            using var bound = new CancellationTokenSource(StartTimeout);
            foreach (var member in started)
            {
                var line = await member.ReadLineAsync(bound.Token);
                if (line is null || !line.StartsWith("ready ", StringComparison.Ordinal))
                {
                    throw new InvalidOperationException($"JGroups member {member.Index} (pid {member.ProcessId}) said '{line}' instead of ready:\n{member.TailLog()}");
                }
            }

            return new JGroupsPeer(started);
        }
        catch (OperationCanceledException)
        {
            var peer = new JGroupsPeer(started);
            var logs = string.Join('\n', started.Select(m => $"member {m.Index}:\n{m.TailLog()}"));
            await peer.DisposeAsync();
            throw new TimeoutException($"The JGroups members did not all see a view of {members} within {StartTimeout.TotalSeconds:F0} s.\n{logs}");
        }
        catch
        {
            await new JGroupsPeer(started).DisposeAsync();
            throw;
        }
    }

    /// <summary>Every member sends at <paramref name="rate"/> messages per second (1 000 000 or more: as fast as the stack accepts; 0: stops).</summary>
    public async Task RunAsync(double rate, int bytes)
    {
        foreach (var member in _members)
        {
            await member.SendAsync(string.Create(CultureInfo.InvariantCulture, $"run {rate} {bytes}"));
        }
    }

    /// <summary>Each member's deliveries so far and the latency of its own messages since its previous mark.</summary>
    public async Task<Mark[]> MarkAsync()
    {
        foreach (var member in _members)
        {
            await member.SendAsync("mark");
        }

        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var marks = new Mark[_members.Count];
        for (var i = 0; i < _members.Count; i++)
        {
            var line = await _members[i].ReadLineAsync(bound.Token);
            var words = line?.Split(' ');
            if (words is not ["mark", var delivered, var p50, var p99, _])
            {
                throw new InvalidOperationException($"JGroups member {i} said '{line}' instead of a mark:\n{_members[i].TailLog()}");
            }

            marks[i] = new Mark(
                long.Parse(delivered, CultureInfo.InvariantCulture),
                double.Parse(p50, CultureInfo.InvariantCulture) / 1000,
                double.Parse(p99, CultureInfo.InvariantCulture) / 1000);
        }

        return marks;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var member in _members)
        {
            await member.DisposeAsync();
        }
    }

    /// <summary>A member's count of delivered messages, and its own messages' latency percentiles in milliseconds.</summary>
    public readonly record struct Mark(long Delivered, double P50Ms, double P99Ms);

    /// <summary>One member process: commands on its standard input, answers on its standard output, its log in a file.</summary>
    private sealed class Member : IAsyncDisposable
    {
        private readonly Process _process;
        private readonly string _logFile;
        private readonly StreamWriter _log;
        private readonly Task _logging;

        private Member(Process process, int index, string logFile)
        {
            _process = process;
            Index = index;
            _logFile = logFile;
            _log = new StreamWriter(logFile, append: true) { AutoFlush = true };
            _logging = Task.Run(async () =>
            {
                while (await process.StandardError.ReadLineAsync() is { } line)
                {
                    await _log.WriteLineAsync(line);
                }
            });
        }

        public int Index { get; }

        public int ProcessId => _process.Id;

        public static Member Start(string folder, string stackFile, string group, int members, int index, int port, string hosts)
        {
            var info = new ProcessStartInfo("java")
            {
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            foreach (var argument in new[]
            {
                "-Djava.net.preferIPv4Stack=true",
                $"-Dquintet.bind_port={port}",
                $"-Dquintet.initial_hosts={hosts}",
                $"-Dquintet.members={members}",
                "-Xmx512m",
                "-cp", $"{JGroupsJar}:{folder}",
                "JGroupsMember", stackFile, group, members.ToString(CultureInfo.InvariantCulture), index.ToString(CultureInfo.InvariantCulture),
            })
            {
                info.ArgumentList.Add(argument);
            }

            var process = Process.Start(info) ?? throw new InvalidOperationException("Could not start java.");
            return new Member(process, index, Path.Combine(folder, $"member-{index}.log"));
        }

        public Task<string?> ReadLineAsync(CancellationToken cancellationToken) =>
            _process.StandardOutput.ReadLineAsync(cancellationToken).AsTask();

        public async Task SendAsync(string line)
        {
            await _process.StandardInput.WriteLineAsync(line);
            await _process.StandardInput.FlushAsync();
        }

        public string TailLog() =>
            File.Exists(_logFile) ? string.Join('\n', File.ReadLines(_logFile).TakeLast(15)) : "(no log)";

        public async ValueTask DisposeAsync()
        {
            if (!_process.HasExited)
            {
                try
                {
                    await SendAsync("quit");
                }
                catch (IOException)
                {
                    // It is ending on its own.
                }

                using var grace = new CancellationTokenSource(TimeSpan.FromSeconds(5));
                try
                {
                    await _process.WaitForExitAsync(grace.Token);
                }
                catch (OperationCanceledException)
                {
                    Signals.Terminate(_process.Id);
                    using var last = new CancellationTokenSource(TimeSpan.FromSeconds(5));
                    try
                    {
                        await _process.WaitForExitAsync(last.Token);
                    }
                    catch (OperationCanceledException)
                    {
                        _process.Kill();
                        await _process.WaitForExitAsync(CancellationToken.None);
                    }
                }
            }

            await _logging;
            await _log.DisposeAsync();
            _process.Dispose();
        }
    }
}
