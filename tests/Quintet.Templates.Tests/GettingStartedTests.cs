using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using System.Xml.Linq;

namespace Quintet.Templates.Tests;

/// <summary>
/// docs/getting-started.md followed word for word: its command blocks marked <c>&lt;!-- step: name --&gt;</c> are read
/// from the page itself and run, one line at a time through <c>/bin/sh -c</c>, in an empty temporary folder, so the
/// page and the test cannot drift apart. Two things are substituted, and printed: the step "local-source" is done by
/// writing a nuget.config whose only source is this run's packed packages (nothing is downloaded), and every port the
/// page names is replaced by a free one. The packages are those the collection's fixture packed, and the two tools
/// packed here from this run's build. Each step's outcome is checked, and how long each took is printed with the
/// total; the managers the page starts are stopped by pid (their process trees killed) when the test ends.
/// </summary>
[Collection(PackedTemplatesGroup.Name)]
public sealed partial class GettingStartedTests(PackedTemplates packed, ITestOutputHelper output) : IDisposable
{
    /// <summary>The steps the page has, in order: a step added to or removed from the page fails here until checked.</summary>
    private static readonly string[] Steps = ["local-source", "tools", "templates", "create", "build", "managers", "cluster", "deploy", "call", "owner", "kill", "call-again"];

    /// <summary>
    /// A bound on the whole test from its start, the fixture's pack and build included when this test is the first to
    /// wait for them: below the test run's hang timeout (10 minutes), so that a stuck step fails here, with what it printed.
    /// The steps themselves take 2 to 3 minutes on two cores.
    /// </summary>
    private static readonly TimeSpan TestBound = TimeSpan.FromMinutes(9.5);

    /// <summary>A bound on one command of the page (a restore and build is the longest, about 20 s).</summary>
    private static readonly TimeSpan LineBound = TimeSpan.FromMinutes(4);

    /// <summary>How long a step the page says to repeat (the cluster forming, a call during a takeover) may be repeated.</summary>
    private static readonly TimeSpan Settle = TimeSpan.FromSeconds(120);

    private readonly string _root = Directory.CreateTempSubdirectory("quintet-getting-started-").FullName;
    private readonly List<Background> _managers = [];

    private ITestOutputHelper Output => output;

    /// <summary>The empty folder the page's commands run in.</summary>
    private string Work => Path.Combine(_root, "work");

    [Fact]
    public async Task The_getting_started_page_runs_word_for_word_and_the_counter_survives_kill_9_of_its_owner()
    {
        var sinceStart = Stopwatch.StartNew();
        var page = ReadPage();
        Assert.Equal(Steps, page.Select(s => s.Name));

        var built = await packed.Built;
        using var bound = new CancellationTokenSource(TestBound - sinceStart.Elapsed);
        var token = bound.Token;

        // The tools are packed from their own projects (not in Quintet.Packages.slnf), without a build: this run built them.
        var preparing = Stopwatch.StartNew();
        var tools = Path.Combine(_root, "tool-packages");
        await Task.WhenAll(
            PackAsync(Path.Combine("src", "Quintet.Manager", "Quintet.Manager.csproj"), "manager", tools, token),
            PackAsync(Path.Combine("tools", "Quintet.Cli", "Quintet.Cli.csproj"), "cli", tools, token));
        output.WriteLine($"preparation (not a step of the page): the two tools packed in {Seconds(preparing.Elapsed)}");

        Directory.CreateDirectory(Work);
        var ports = FreePorts(page);
        output.WriteLine($"ports substituted: {string.Join(", ", ports.Select(p => $"{p.Key} -> {p.Value}"))}");
        var environment = new Dictionary<string, string?>
        {
            // The template hive, the tools' and NuGet's user folders: the test's own, never the user's.
            ["DOTNET_CLI_HOME"] = Path.Combine(_root, "home"),
            ["NUGET_PACKAGES"] = Path.Combine(_root, "nuget-packages"),
            ["NUGET_HTTP_CACHE_PATH"] = Path.Combine(_root, "nuget-http-cache"),
            ["NUGET_SCRATCH"] = Path.Combine(_root, "nuget-scratch"),
        };

        var run = new Run(this, environment, token);
        var times = new List<(string Step, TimeSpan Took)>();
        var total = Stopwatch.StartNew();
        try
        {
            foreach (var step in page)
            {
                Assert.True(step.Background == (step.Name == "managers"), $"only the managers run in the background, not '{step.Name}'");
                var watch = Stopwatch.StartNew();
                var lines = step.Lines.Select(line => PortNumber().Replace(line, m => ports[m.Value].ToString(CultureInfo.InvariantCulture))).ToList();
                await RunStepAsync(step.Name, lines, run, built, tools);
                times.Add((step.Name, watch.Elapsed));
                output.WriteLine($"step {step.Name}: {Seconds(watch.Elapsed)}");
            }
        }
        finally
        {
            await StopManagersAsync();
            output.WriteLine(string.Empty);
            output.WriteLine("step          took");
            foreach (var (step, took) in times)
            {
                output.WriteLine($"{step,-12}  {Seconds(took)}");
            }

            output.WriteLine($"{"total",-12}  {Seconds(total.Elapsed)} for {times.Count} of {page.Count} steps (target: under 5 minutes)");
        }
    }

    public void Dispose()
    {
        foreach (var manager in _managers)
        {
            manager.Dispose();
        }

        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A file still held: the temporary folder is left for the system to clear.
        }
    }

    private async Task RunStepAsync(string step, List<string> lines, Run run, BuiltTemplates built, string tools)
    {
        switch (step)
        {
            case "local-source":
                // The page's way (dotnet new nugetconfig, dotnet nuget add source) would keep nuget.org; the test's
                // nuget.config has the packed folders alone, and the machine's package folders for third-party packages.
                Assert.Contains(lines, line => line.StartsWith("dotnet nuget add source ", StringComparison.Ordinal));
                WriteNuGetConfig(tools);
                return;

            case "tools":
                await run.AllAsync(lines);
                var manifest = await File.ReadAllTextAsync(Path.Combine(Work, "dotnet-tools.json"));
                Assert.Contains("quintet-manager", manifest, StringComparison.Ordinal);
                Assert.Contains("\"quintet\"", manifest, StringComparison.Ordinal);
                return;

            case "templates":
                Assert.Contains("quintet-component", await run.AllAsync(lines), StringComparison.Ordinal);
                return;

            case "create":
                await run.AllAsync(lines);
                Assert.Contains($"Version=\"{built.Version}\"", await File.ReadAllTextAsync(Path.Combine(Work, "Tally", "Tally.csproj")), StringComparison.Ordinal);
                Assert.True(File.Exists(Path.Combine(Work, "Tally.Client", "Tally.Client.csproj")));
                return;

            case "build":
                await run.AllAsync(lines);
                Assert.True(File.Exists(Path.Combine(Work, "Tally", "bin", "Release", "net10.0", "publish", "Tally-1.0.0.zip")), "dotnet publish made no Tally-1.0.0.zip");
                return;

            case "managers":
                Assert.Equal(3, lines.Count);
                foreach (var line in lines)
                {
                    _managers.Add(run.Start(line));
                }

                return;

            case "cluster":
                await run.RepeatAsync(Assert.Single(lines), result => result.ExitCode == 0 && result.Output.Contains("3 of 3 Up", StringComparison.Ordinal), _managers);
                return;

            case "deploy":
                Assert.Contains("Deployed Tally 1.0.0", await run.AllAsync(lines), StringComparison.Ordinal);
                return;

            case "call":
                // The page: a manager that has not loaded the package yet answers "call failed" (exit code 1); run it again.
                var first = CounterLine().Match(await CallAsync(run, Assert.Single(lines)));
                Assert.True(first.Success && first.Groups["value"].Value == "5", $"the first call should print 'counter-1 = 5 on <manager>', not '{first.Value}'");
                run.Owner = first.Groups["manager"].Value;
                return;

            case "owner":
                var table = await run.AllAsync(lines);
                Assert.Contains(run.Owner!, table, StringComparison.Ordinal);
                Assert.Contains("backup", table, StringComparison.Ordinal);
                return;

            case "kill":
                await run.AllAsync(lines);
                // The manager killed is the owner: its process ends (its dotnet quintet-manager with it), the others run on.
                var owner = Assert.Single(_managers, m => m.Line.Contains($"NodeName={run.Owner} ", StringComparison.Ordinal));
                using (var ended = CancellationTokenSource.CreateLinkedTokenSource(run.Token))
                {
                    ended.CancelAfter(TimeSpan.FromSeconds(30));
                    await owner.WaitForExitAsync(ended.Token);
                }

                Assert.All(_managers.Where(m => m != owner), m => Assert.False(m.HasExited, $"'{m.Line}' ended too:\n{m.Output}"));
                return;

            case "call-again":
                var again = CounterLine().Match(await CallAsync(run, Assert.Single(lines)));
                Assert.True(again.Success && again.Groups["value"].Value == "6", $"after the kill the call should print 'counter-1 = 6 on <another manager>' (5 kept, 1 added), not '{again.Value}'");
                Assert.NotEqual(run.Owner, again.Groups["manager"].Value);
                return;

            default:
                throw new InvalidOperationException($"The page has a step '{step}' that this test does not know.");
        }
    }

    private static async Task<string> CallAsync(Run run, string line)
    {
        var result = await run.RepeatAsync(line, r => r.ExitCode != 1, managers: null);
        Assert.True(result.ExitCode == 0, $"'{line}' failed with exit code {result.ExitCode}:\n{result.Output}\n{result.Error}");
        return result.Output.Trim();
    }

    private async Task StopManagersAsync()
    {
        // By pid: each manager's sh, dotnet quintet-manager and the manager it runs, as one process tree.
        await Task.WhenAll(_managers.Select(m => m.StopAsync()));
    }

    private Task<string> PackAsync(string project, string name, string packages, CancellationToken token) =>
        Command.CheckedAsync(
            "dotnet",
            ["pack", Path.Combine(Repository.Root, project), "--no-build", "-c", Repository.Configuration, "-o", packages, "-nologo", "-v:m",
            $"-p:NuspecOutputPath={Path.Combine(_root, "nuspec-" + name)}/", $"-p:PublishDir={Path.Combine(_root, "publish-" + name)}/"],
            PackedTemplates.CommandBound,
            Repository.Root,
            null,
            token);

    private void WriteNuGetConfig(string tools)
    {
        static XElement Add(string key, string value) => new("add", new XAttribute("key", key), new XAttribute("value", value));
        new XDocument(new XElement("configuration",
            new XElement("packageSources", new XElement("clear"), Add("quintet-local", packed.Packages), Add("quintet-local-tools", tools)),
            new XElement("fallbackPackageFolders", new XElement("clear"), PackedTemplates.MachinePackageFolders().Select((folder, i) => Add($"machine-{i}", folder)))))
            .Save(Path.Combine(Work, "nuget.config"));
    }

    /// <summary>The page's marked command blocks, each line a command (comments and blank lines left out).</summary>
    private static List<PageStep> ReadPage()
    {
        var text = File.ReadAllText(Path.Combine(Repository.Root, "docs", "getting-started.md")).ReplaceLineEndings("\n");
        return StepBlock().Matches(text)
            .Select(m => new PageStep(
                m.Groups["name"].Value,
                m.Groups["background"].Success,
                m.Groups["body"].Value.Split('\n').Select(l => l.Trim()).Where(l => l.Length > 0 && !l.StartsWith('#')).ToList()))
            .ToList();
    }

    /// <summary>A free loopback port for each port the page names, all bound at once so that no two are the same.</summary>
    private static Dictionary<string, int> FreePorts(IEnumerable<PageStep> page)
    {
        var named = page.SelectMany(s => s.Lines).SelectMany(l => PortNumber().Matches(l).Select(m => m.Value)).Distinct().ToList();
        var listeners = named.Select(_ => new TcpListener(IPAddress.Loopback, 0)).ToList();
        try
        {
            listeners.ForEach(l => l.Start());
            return named.Zip(listeners, (port, listener) => (port, ((IPEndPoint)listener.LocalEndpoint).Port)).ToDictionary(p => p.port, p => p.Item2);
        }
        finally
        {
            listeners.ForEach(l => l.Stop());
        }
    }

    private static string Seconds(TimeSpan span) => $"{span.TotalSeconds:F1} s";

    [GeneratedRegex(@"<!-- step: (?<name>[a-z-]+)(?<background> background)? -->\n```sh\n(?<body>.*?)\n```", RegexOptions.Singleline)]
    private static partial Regex StepBlock();

    /// <summary>A port the page names: a loopback address's, or a <c>...Port=</c> setting's.</summary>
    [GeneratedRegex(@"(?<=127\.0\.0\.1:|Port=)\d{4,5}\b")]
    private static partial Regex PortNumber();

    [GeneratedRegex(@"^counter-1 = (?<value>-?\d+) on (?<manager>\S+)$", RegexOptions.Multiline)]
    private static partial Regex CounterLine();

    private sealed record PageStep(string Name, bool Background, IReadOnlyList<string> Lines);

    /// <summary>Runs the page's lines in the work folder, with the test's environment, each bounded and logged.</summary>
    private sealed class Run(GettingStartedTests test, IReadOnlyDictionary<string, string?> environment, CancellationToken token)
    {
        public CancellationToken Token => token;

        /// <summary>The manager that hosted counter-1 when it was first called.</summary>
        public string? Owner { get; set; }

        /// <summary>Runs each line once; each must succeed. Returns what they printed.</summary>
        public async Task<string> AllAsync(IEnumerable<string> lines)
        {
            var printed = new StringBuilder();
            foreach (var line in lines)
            {
                var result = await OnceAsync(line);
                Assert.True(result.ExitCode == 0, $"'{line}' failed with exit code {result.ExitCode}:\n{result.Output}\n{result.Error}");
                printed.Append(result.Output);
            }

            return printed.ToString();
        }

        /// <summary>Runs a line until <paramref name="done"/> holds, as the page says to, within <see cref="Settle"/>.</summary>
        public async Task<CommandResult> RepeatAsync(string line, Func<CommandResult, bool> done, IReadOnlyList<Background>? managers)
        {
            var end = DateTime.UtcNow + Settle;
            for (var attempt = 1; ; attempt++)
            {
                var result = await OnceAsync(line);
                if (done(result))
                {
                    return result;
                }

                if (managers?.FirstOrDefault(m => m.HasExited) is { } ended)
                {
                    Assert.Fail($"'{ended.Line}' ended with exit code {ended.ExitCode}:\n{ended.Output}");
                }

                if (DateTime.UtcNow > end)
                {
                    Assert.Fail($"'{line}' did not get there in {attempt} runs within {Settle.TotalSeconds:F0} s; it last printed (exit code {result.ExitCode}):\n{result.Output}\n{result.Error}");
                }

                await Task.Delay(TimeSpan.FromSeconds(1), token);
            }
        }

        public Background Start(string line)
        {
            test.Output.WriteLine($"  $ {line} &");
            return new Background(line, test.Work, environment);
        }

        private async Task<CommandResult> OnceAsync(string line)
        {
            var watch = Stopwatch.StartNew();
            var result = await Command.RunAsync("/bin/sh", ["-c", line], LineBound, test.Work, environment, token);
            test.Output.WriteLine($"  $ {line}   [{Seconds(watch.Elapsed)}, exit code {result.ExitCode}]");
            return result;
        }
    }

    /// <summary>A line of the page that runs until stopped (a manager), its output kept for a failure's message.</summary>
    private sealed class Background : IDisposable
    {
        private readonly Process _process;
        private readonly StringBuilder _output = new();

        public Background(string line, string workingDirectory, IReadOnlyDictionary<string, string?> environment)
        {
            Line = line;
            _process = Process.Start(Command.StartInfo("/bin/sh", ["-c", line], workingDirectory, environment)) ?? throw new InvalidOperationException($"Could not start '{line}'.");
            _process.StandardInput.Close();
            _ = Command.PumpAsync(_process.StandardOutput, _output);
            _ = Command.PumpAsync(_process.StandardError, _output);
        }

        public string Line { get; }

        public bool HasExited => _process.HasExited;

        public int ExitCode => _process.ExitCode;

        public string Output
        {
            get
            {
                lock (_output)
                {
                    return _output.ToString();
                }
            }
        }

        public Task WaitForExitAsync(CancellationToken cancellationToken) => _process.WaitForExitAsync(cancellationToken);

        /// <summary>Kills the line's process tree (by its pid) and waits for it to end, within a bound.</summary>
        public async Task StopAsync()
        {
            try
            {
                _process.Kill(entireProcessTree: true);
            }
            catch (InvalidOperationException)
            {
                // It had ended (the manager killed by the page).
            }

            await Task.WhenAny(_process.WaitForExitAsync(CancellationToken.None), Task.Delay(TimeSpan.FromSeconds(30), CancellationToken.None));
        }

        public void Dispose()
        {
            try
            {
                _process.Kill(entireProcessTree: true);
            }
            catch (InvalidOperationException)
            {
                // Already stopped.
            }

            _process.Dispose();
        }
    }
}
