using System.Diagnostics;
using System.IO.Compression;
using System.Text.Json;
using Google.Protobuf;
using Quintet.Protocol.Admin;
using Quintet.Tests;

namespace Quintet.Templates.Tests;

/// <summary>
/// The templates as a component author uses them: installed from the packed package, each created, built against the
/// packed Quintet packages alone, the components published to their zips (all done by <see cref="PackedTemplates"/>),
/// deployed to a local cluster and called through the generated clients, and the generated test project run.
/// </summary>
[Collection(PackedTemplatesGroup.Name)]
public sealed class TemplateTests(PackedTemplates packed, ITestOutputHelper output)
{
    private static readonly TimeSpan Settle = TimeSpan.FromSeconds(90);

    /// <summary>The generated test's bound (it takes 20 to 40 s); with the build's, within the run's hang timeout.</summary>
    private static readonly TimeSpan GeneratedTestBound = TimeSpan.FromMinutes(3);

    [Fact]
    public async Task Every_template_builds_publishes_deploys_and_is_called()
    {
        var built = await packed.Built;
        foreach (var (step, at) in built.Times)
        {
            output.WriteLine($"{step} at {at.TotalSeconds:F0} s");
        }

        var watch = Stopwatch.StartNew();
        Assert.Equal(8, built.Projects.Count);
        Assert.All(built.Projects, p => Assert.Contains($"Version=\"{built.Version}\"", File.ReadAllText(Path.Combine(packed.Work, p)), StringComparison.Ordinal));

        // The generated test (a cluster of three, the owner killed with kill -9, the state still there) runs in a
        // process of its own while the components are deployed to the shared cluster and called; stopped if this fails.
        using var stopTests = new CancellationTokenSource();
        var tests = Command.RunAsync("dotnet", ["test", "Backed.Tests/Backed.Tests.csproj", "--no-build", "-nologo"], GeneratedTestBound, packed.Work, packed.WorkEnvironment, stopTests.Token);
        try
        {
            await DeployAndCallAsync(built);
            output.WriteLine($"deployed and called at {watch.Elapsed.TotalSeconds:F0} s");
            var (code, printed, error) = await tests;
            Assert.True(code == 0, $"The generated test failed with exit code {code}:\n{printed}\n{error}");
            Assert.Contains("Passed!", printed, StringComparison.Ordinal);
            output.WriteLine($"generated test passed at {watch.Elapsed.TotalSeconds:F0} s");
        }
        finally
        {
            await stopTests.CancelAsync();
            await Task.WhenAny(tests);
        }
    }

    private async Task DeployAndCallAsync(BuiltTemplates built)
    {
        // dotnet publish made each component's deployable zip, with the manifest the build wrote from its classes.
        foreach (var (name, zip) in built.Zips)
        {
            using var archive = ZipFile.OpenRead(zip);
            Assert.Equal([$"{name}.dll", $"{name}.pdb", "quintet-package.json", "quintet-qos.yaml"], archive.Entries.Select(e => e.FullName).Order(StringComparer.Ordinal));
        }

        var docs = Manifest(built.Zips["Docs"]);
        Assert.Equal("Docs", docs.GetProperty("name").GetString());
        Assert.Equal("Docs.DocumentFactory", docs.GetProperty("components")[0].GetProperty("factory").GetString());
        Assert.Equal("Backed.CounterComponent", Manifest(built.Zips["Backed"]).GetProperty("components")[0].GetProperty("class").GetString());

        var cluster = packed.Cluster;
        var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
        foreach (var zip in built.Zips.Values)
        {
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(await File.ReadAllBytesAsync(zip)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        }

        await Eventually.TrueAsync(
            async () => (await Task.WhenAll(cluster.Managers.Select(async m => (await new ComponentAdmin.ComponentAdminClient(m.Channel)
                .ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10))).Packages.Select(p => p.Name).ToHashSet()))).All(loaded => loaded.IsSupersetOf(built.Zips.Keys)),
            Settle,
            "every manager has loaded the four packages");

        // The QoS spec each zip carries is the one the classes run with.
        Assert.Contains("replication: primaryBackup", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Backed.CounterComponent" })).Spec, StringComparison.Ordinal);
        Assert.Contains("replication: active", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Active.CounterComponent" })).Spec, StringComparison.Ordinal);
        Assert.Contains("instancing: fresh", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Docs.DocumentComponent" })).Spec, StringComparison.Ordinal);

        // Each generated client calls its component twice (the clients side by side); the second call sees the first.
        var endpoints = string.Join(',', cluster.Managers.Select(m => m.GrpcEndpoint));
        await Task.WhenAll(PackedTemplates.Components.Select(async component =>
        {
            var client = Path.Combine(packed.Work, $"{component.Name}.Client", "bin", "Debug", "net10.0", $"{component.Name}.Client.dll");
            Assert.StartsWith("key-1 = 5 on manager-", await CallAsync(client, endpoints, "key-1", "5"), StringComparison.Ordinal);
            Assert.StartsWith("key-1 = 7 on manager-", await CallAsync(client, endpoints, "key-1", "2"), StringComparison.Ordinal);
        }));

        // The class factory the build found names the instances clients create.
        var created = await new ComponentInstances.ComponentInstancesClient(cluster.Managers[1].Channel)
            .CreateInstanceAsync(new CreateInstanceRequest { Contract = "Docs.Document" }, deadline: DateTime.UtcNow.AddSeconds(30));
        Assert.Matches("^doc-[0-9a-f]{12}$", created.Key);
    }

    /// <summary>Runs a generated client until the cluster serves the call (a first placement may meet a manager still loading).</summary>
    private static async Task<string> CallAsync(string client, string endpoints, string key, string amount)
    {
        var end = DateTime.UtcNow + Settle;
        while (true)
        {
            var (code, printed, error) = await Command.RunAsync("dotnet", [client, endpoints, key, amount], TimeSpan.FromSeconds(60));
            if (code == 0)
            {
                return printed.Trim();
            }

            if (code != 1 || DateTime.UtcNow > end)
            {
                throw new InvalidOperationException($"The client {Path.GetFileName(client)} failed with exit code {code}: {printed} {error}");
            }

            await Task.Delay(500);
        }
    }

    private static JsonElement Manifest(string zip)
    {
        using var archive = ZipFile.OpenRead(zip);
        using var stream = archive.GetEntry("quintet-package.json")!.Open();
        return JsonDocument.Parse(stream).RootElement.Clone();
    }
}
