using System.Diagnostics;
using System.Xml.Linq;

namespace Quintet.Templates.Tests;

/// <summary>
/// The Quintet packages and templates packed once for every test of the collection, into a temporary folder: the
/// libraries and the templates with one <c>dotnet pack</c> of <c>Quintet.Packages.slnf</c>, the templates installed
/// into a template hive of their own (never the user's), and a <c>nuget.config</c> for the projects the templates
/// create that restores from the packed folder alone (the packages it does not hold, protobuf-net or xunit, are taken
/// from the machine's package folders, where the repository's own restore put them).
/// </summary>
public sealed class PackedTemplates : IAsyncLifetime
{
    /// <summary>
    /// A bound on each command: the pack evaluates and packs seven projects and publishes the manager, which took more
    /// than 5 minutes on two cores shared with other builds. The compiler server is used (it is warm from the build of
    /// these tests); MSBuild's worker nodes are not kept (-nodeReuse:false), so nothing of MSBuild outlives a command.
    /// </summary>
    public static readonly TimeSpan CommandBound = TimeSpan.FromMinutes(10);

    public string Root { get; } = Path.Combine(Path.GetTempPath(), "quintet-templates-" + Guid.NewGuid().ToString("N")[..8]);

    public string Packages => Path.Combine(Root, "packages");

    public string Hive => Path.Combine(Root, "hive");

    /// <summary>Where the projects are created; its nuget.config applies to all of them.</summary>
    public string Work => Path.Combine(Root, "work");

    public string Version { get; private set; } = string.Empty;

    public TimeSpan PackTime { get; private set; }

    public async Task InitializeAsync()
    {
        Directory.CreateDirectory(Work);
        var watch = Stopwatch.StartNew();
        await DotnetAsync(Repository.Root, "pack", Path.Combine(Repository.Root, "Quintet.Packages.slnf"), "-c", Repository.Configuration, "-o", Packages, "-nodeReuse:false");
        PackTime = watch.Elapsed;

        var templates = Directory.GetFiles(Packages, "Quintet.Templates.*.nupkg").Single();
        Version = Path.GetFileNameWithoutExtension(templates)["Quintet.Templates.".Length..];
        await DotnetAsync(Root, "new", "install", templates, "--debug:custom-hive", Hive);

        var userPackages = Environment.GetEnvironmentVariable("NUGET_PACKAGES") is { Length: > 0 } configured
            ? configured
            : Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".nuget", "packages");
        var fallbacks = new[] { userPackages, "/opt/nuget/packages" }.Where(Directory.Exists).ToList();
        new XDocument(new XElement("configuration",
            new XElement("config", Add("globalPackagesFolder", Path.Combine(Root, "nuget-packages"))),
            new XElement("packageSources", new XElement("clear"), Add("quintet-packed", Packages)),
            new XElement("fallbackPackageFolders", new XElement("clear"), fallbacks.Select((folder, i) => Add($"machine-{i}", folder)))))
            .Save(Path.Combine(Work, "nuget.config"));
    }

    public Task DisposeAsync()
    {
        try
        {
            Directory.Delete(Root, recursive: true);
        }
        catch (IOException)
        {
            // A file still held (a manager's log closing): the temporary folder is left for the system to clear.
        }

        return Task.CompletedTask;
    }

    /// <summary>Creates a project from one of the installed templates in <see cref="Work"/>.</summary>
    public Task NewAsync(string template, string name, params string[] options) =>
        DotnetAsync(Work, ["new", template, "-n", name, "-o", Path.Combine(Work, name), "--debug:custom-hive", Hive, "--no-update-check", .. options]);

    /// <summary>Runs dotnet, which must succeed; returns what it printed.</summary>
    public static Task<string> DotnetAsync(string workingDirectory, params string[] arguments) =>
        Command.CheckedAsync("dotnet", arguments, CommandBound, workingDirectory);

    private static XElement Add(string key, string value) => new("add", new XAttribute("key", key), new XAttribute("value", value));
}

[CollectionDefinition(Name)]
public sealed class PackedTemplatesGroup : ICollectionFixture<PackedTemplates>
{
    public const string Name = "packed templates";
}
