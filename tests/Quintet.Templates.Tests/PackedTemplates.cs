using System.Diagnostics;
using System.Xml.Linq;
using Quintet.TestingHost;

// Every test here shares one cluster and one set of built templates: none runs beside another.
[assembly: CollectionBehavior(DisableTestParallelization = true)]

namespace Quintet.Templates.Tests;

/// <summary>
/// What the collection's tests share, made once per test run in a temporary folder and removed with it:
/// <list type="bullet">
/// <item>a local cluster of two managers, which every test deploys its packages to;</item>
/// <item>the Quintet packages and templates packed with one command from what this test run built (no build, no second
/// pack), the templates installed into template hives of their own (never the user's), a project created from each
/// template and all of them built with one <c>dotnet build</c> of one solution, restoring from the packed folder alone
/// into a packages folder of their own, and the components published with one <c>dotnet publish</c>.</item>
/// </list>
/// The cluster starts while the templates are packed and built. Every command is bounded and, when the fixture stops
/// (its end, or a failed start), killed with its process tree.
/// </summary>
public sealed class PackedTemplates : IAsyncLifetime, IDisposable
{
    /// <summary>
    /// A bound on each command, far above what it takes (the pack takes 25 s, the build of the eight projects 60 s on
    /// two cores shared with other builds), and well below the test run's hang timeout (10 minutes).
    /// </summary>
    public static readonly TimeSpan CommandBound = TimeSpan.FromMinutes(4);

    /// <summary>
    /// A bound on the pack, the creation, the build and the publish together (2 minutes on two cores at a load average
    /// of 25), so that with the generated test's bound a stuck step fails the test within the run's hang timeout.
    /// </summary>
    public static readonly TimeSpan BuildBound = TimeSpan.FromMinutes(6);

    /// <summary>The components the templates make: each replication choice, and the class factory.</summary>
    public static readonly (string Name, string Replication)[] Components = [("Plain", "none"), ("Backed", "primary-backup"), ("Active", "active")];

    /// <summary>The projects created, in two lanes that run side by side.</summary>
    private static readonly (string Template, string Name, string[] Options)[][] Lanes =
    [
        [
            ("quintet-component", "Plain", ["--replication", "none"]),
            ("quintet-client", "Plain.Client", ["--component", "Plain"]),
            ("quintet-component", "Backed", ["--replication", "primary-backup"]),
            ("quintet-client", "Backed.Client", ["--component", "Backed"]),
        ],
        [
            ("quintet-component", "Active", ["--replication", "active"]),
            ("quintet-client", "Active.Client", ["--component", "Active"]),
            ("quintet-factory", "Docs", []),
            ("quintet-tests", "Backed.Tests", ["--component", "Backed", "--replication", "primary-backup"]),
        ],
    ];

    private readonly CancellationTokenSource _stopping = new();
    private Task<BuiltTemplates>? _built;
    private LocalCluster? _cluster;

    public string Root { get; } = Directory.CreateTempSubdirectory("quintet-templates-").FullName;

    public string Packages => Path.Combine(Root, "packages");

    /// <summary>Where the projects are created; its nuget.config applies to all of them.</summary>
    public string Work => Path.Combine(Root, "work");

    /// <summary>The NuGet global packages folder of the created projects (never the user's).</summary>
    private string NuGetPackages => Path.Combine(Root, "nuget-packages");

    /// <summary>The cluster the tests deploy to.</summary>
    public LocalCluster Cluster => _cluster ?? throw new InvalidOperationException("The cluster has not started.");

    /// <summary>The templates packed, installed, created, built and published; fails with the first command that failed.</summary>
    public Task<BuiltTemplates> Built => _built ?? throw new InvalidOperationException("The templates are not being built.");

    /// <summary>The environment of every command run on the created projects: their own NuGet folders.</summary>
    public IReadOnlyDictionary<string, string?> WorkEnvironment => new Dictionary<string, string?>
    {
        // NUGET_PACKAGES overrides the nuget.config's globalPackagesFolder, so it is set rather than removed.
        ["NUGET_PACKAGES"] = NuGetPackages,
        ["NUGET_HTTP_CACHE_PATH"] = Path.Combine(Root, "nuget-http-cache"),
        ["NUGET_SCRATCH"] = Path.Combine(Root, "nuget-scratch"),
    };

    public async Task InitializeAsync()
    {
        try
        {
            Directory.CreateDirectory(Work);
            _built = Task.Run(BuildWithinBoundAsync);
            _cluster = await LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 2 }, cancellationToken: _stopping.Token);
            await _cluster.WaitForGroupViewAsync(_cluster.Managers, _stopping.Token);
        }
        catch
        {
            await StopAsync();
            throw;
        }
    }

    public Task DisposeAsync() => StopAsync();

    /// <summary>After <see cref="DisposeAsync"/>, which xUnit calls first.</summary>
    public void Dispose() => _stopping.Dispose();

    /// <summary>Runs dotnet, which must succeed; returns what it printed. Stopped with the fixture.</summary>
    public Task<string> DotnetAsync(string workingDirectory, IReadOnlyDictionary<string, string?>? environment, params string[] arguments) =>
        Command.CheckedAsync("dotnet", arguments, CommandBound, workingDirectory, environment, _stopping.Token);

    private static Task<string> RunDotnetAsync(string workingDirectory, IReadOnlyDictionary<string, string?>? environment, string[] arguments, CancellationToken stopping) =>
        Command.CheckedAsync("dotnet", arguments, CommandBound, workingDirectory, environment, stopping);

    private async Task<BuiltTemplates> BuildWithinBoundAsync()
    {
        using var bound = CancellationTokenSource.CreateLinkedTokenSource(_stopping.Token);
        bound.CancelAfter(BuildBound);
        try
        {
            return await BuildAsync(bound.Token);
        }
        catch (Exception e) when (e is TimeoutException or OperationCanceledException && bound.IsCancellationRequested && !_stopping.IsCancellationRequested)
        {
            throw new TimeoutException($"Packing, creating, building and publishing the templates took more than {BuildBound.TotalMinutes:F0} minutes: {e.Message}", e);
        }
    }

    private async Task<BuiltTemplates> BuildAsync(CancellationToken stopping)
    {
        var times = new List<(string Step, TimeSpan At)>();
        var watch = Stopwatch.StartNew();

        // One pack of every package from this run's build (pack does not build); -restore so the testing host's
        // restore leaves the manager out of its package dependencies (_IsPacking). Staging and nuspecs go to the
        // temporary folder, so that nothing of the pack lands in the repository's obj folders.
        await RunDotnetAsync(Repository.Root, null,
            ["msbuild", Path.Combine(Repository.Root, "Quintet.Packages.slnf"), "-restore", "-t:Pack", "-nologo", "-v:m",
            "-p:NoBuild=true", "-p:_IsPacking=true", $"-p:Configuration={Repository.Configuration}",
            $"-p:PackageOutputPath={Packages}/", $"-p:NuspecOutputPath={Path.Combine(Root, "nuspec")}/", $"-p:QuintetPackStagingDir={Path.Combine(Root, "staging")}/"], stopping);
        times.Add(("packed", watch.Elapsed));
        var templates = Directory.GetFiles(Packages, "Quintet.Templates.*.nupkg").Single();
        var version = Path.GetFileNameWithoutExtension(templates)["Quintet.Templates.".Length..];

        new XDocument(new XElement("configuration",
            new XElement("config", Add("globalPackagesFolder", NuGetPackages)),
            new XElement("packageSources", new XElement("clear"), Add("quintet-packed", Packages)),
            new XElement("fallbackPackageFolders", new XElement("clear"), MachinePackageFolders().Select((folder, i) => Add($"machine-{i}", folder)))))
            .Save(Path.Combine(Work, "nuget.config"));

        // Two lanes, one per core, each with a hive of its own (two dotnet new never write one hive at once).
        await Task.WhenAll(Lanes.Select((lane, i) => CreateAsync(templates, Path.Combine(Root, $"hive-{i}"), lane)));
        times.Add(("created", watch.Elapsed));

        var projects = Directory.GetFiles(Work, "*.csproj", SearchOption.AllDirectories).Select(p => Path.GetRelativePath(Work, p)).Order(StringComparer.Ordinal).ToList();
        string[] packages = [.. Components.Select(c => c.Name), "Docs"];
        await File.WriteAllTextAsync(Path.Combine(Work, "All.slnx"), Solution(projects), stopping);
        await File.WriteAllTextAsync(Path.Combine(Work, "Components.slnx"), Solution(packages.Select(name => Path.Combine(name, name + ".csproj"))), stopping);

        // One restore and build of all the projects (the warm compiler server compiles them), then one publish of
        // the four components from that build: each makes its deployable zip.
        await RunDotnetAsync(Work, WorkEnvironment, ["build", "All.slnx", "-nologo", "-v:m"], stopping);
        times.Add(("built", watch.Elapsed));
        await RunDotnetAsync(Work, WorkEnvironment, ["publish", "Components.slnx", "--no-build", "-c", "Debug", "-nologo", "-v:m"], stopping);
        times.Add(("published", watch.Elapsed));

        return new BuiltTemplates(version, projects, packages.ToDictionary(name => name, name => Path.Combine(Work, name, "bin", "Debug", "net10.0", "publish", $"{name}-1.0.0.zip")), times);

        async Task CreateAsync(string package, string hive, (string Template, string Name, string[] Options)[] lane)
        {
            await RunDotnetAsync(Root, null, ["new", "install", package, "--debug:custom-hive", hive], stopping);
            foreach (var (template, name, options) in lane)
            {
                await RunDotnetAsync(Work, null, ["new", template, "-n", name, "-o", Path.Combine(Work, name), "--debug:custom-hive", hive, "--no-update-check", .. options], stopping);
            }
        }
    }

    /// <summary>Stops what runs (a command, the cluster) and removes the temporary folder. Safe to call twice.</summary>
    private async Task StopAsync()
    {
        await _stopping.CancelAsync();
        if (_built is not null)
        {
            // Only its end matters here; its failure is reported by the test that awaited it.
            await Task.WhenAny(_built);
        }

        if (_cluster is not null)
        {
            await _cluster.DisposeAsync();
            _cluster = null;
        }

        try
        {
            if (Directory.Exists(Root))
            {
                Directory.Delete(Root, recursive: true);
            }
        }
        catch (IOException)
        {
            // A file still held (a log closing): the temporary folder is left for the system to clear.
        }
    }

    /// <summary>
    /// The machine's package folders, where the repository's own restore put the third-party packages the created
    /// projects need (protobuf-net, Grpc, xunit): read as fallback folders, so nothing is downloaded or written there.
    /// </summary>
    internal static IEnumerable<string> MachinePackageFolders()
    {
        var user = Environment.GetEnvironmentVariable("NUGET_PACKAGES") is { Length: > 0 } configured
            ? configured
            : Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".nuget", "packages");
        return new[] { user, "/opt/nuget/packages" }.Where(Directory.Exists);
    }

    private static string Solution(IEnumerable<string> projects) =>
        $"<Solution>\n{string.Concat(projects.Select(p => $"  <Project Path=\"{p}\" />\n"))}</Solution>\n";

    private static XElement Add(string key, string value) => new("add", new XAttribute("key", key), new XAttribute("value", value));
}

/// <summary>The created projects, built, and the components' zips.</summary>
/// <param name="Version">The packed Quintet version, which the created projects reference.</param>
/// <param name="Projects">The created projects, relative to the work folder.</param>
/// <param name="Zips">Each component's published zip, by its name.</param>
/// <param name="Times">When each step was done, from the start of the pack.</param>
public sealed record BuiltTemplates(string Version, IReadOnlyList<string> Projects, IReadOnlyDictionary<string, string> Zips, IReadOnlyList<(string Step, TimeSpan At)> Times);

/// <summary>The tests that share the cluster and the packed templates; run one at a time, never beside one another.</summary>
[CollectionDefinition(Name)]
public sealed class PackedTemplatesGroup : ICollectionFixture<PackedTemplates>
{
    public const string Name = "packed templates";
}
