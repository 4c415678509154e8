using System.Diagnostics;
using System.IO.Compression;
using System.Text.Json;
using Google.Protobuf;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests;

namespace Quintet.Templates.Tests;

/// <summary>
/// The templates as a component author uses them: installed from the packed package, each created, built against the
/// packed Quintet packages alone, the components published to their zips, deployed to a local cluster and called
/// through the generated clients, and the generated test project run.
/// </summary>
[Collection(PackedTemplatesGroup.Name)]
public sealed class TemplateTests(PackedTemplates packed, ITestOutputHelper output)
{
    private static readonly TimeSpan Settle = TimeSpan.FromSeconds(90);

    private static readonly (string Name, string Replication)[] Components = [("Plain", "none"), ("Backed", "primary-backup"), ("Active", "active")];

    [Fact]
    public async Task Every_template_builds_publishes_deploys_and_is_called()
    {
        var watch = Stopwatch.StartNew();
        output.WriteLine($"packed {packed.Version} in {packed.PackTime.TotalSeconds:F0} s");
        foreach (var (name, replication) in Components)
        {
            await packed.NewAsync("quintet-component", name, "--replication", replication);
            await packed.NewAsync("quintet-client", name + ".Client", "--component", name);
        }

        await packed.NewAsync("quintet-factory", "Docs");
        await packed.NewAsync("quintet-tests", "Backed.Tests", "--component", "Backed", "--replication", "primary-backup");
        var projects = Directory.GetFiles(packed.Work, "*.csproj", SearchOption.AllDirectories).Select(p => Path.GetRelativePath(packed.Work, p)).Order().ToList();
        Assert.Equal(8, projects.Count);
        Assert.All(projects, p => Assert.Contains($"Version=\"{packed.Version}\"", File.ReadAllText(Path.Combine(packed.Work, p)), StringComparison.Ordinal));
        await File.WriteAllTextAsync(Path.Combine(packed.Work, "All.slnx"), $"<Solution>\n{string.Concat(projects.Select(p => $"  <Project Path=\"{p}\" />\n"))}</Solution>\n");
        await PackedTemplates.DotnetAsync(packed.Work, "build", "All.slnx", "-nodeReuse:false");
        output.WriteLine($"created and built {projects.Count} projects at {watch.Elapsed.TotalSeconds:F0} s");

        // dotnet publish makes each component's deployable zip, with the manifest the build wrote from its classes.
        string[] packages = [.. Components.Select(c => c.Name), "Docs"];
        await Task.WhenAll(packages.Select(name => PackedTemplates.DotnetAsync(packed.Work, "publish", $"{name}/{name}.csproj", "-c", "Debug", "--no-build")));
        var zips = packages.ToDictionary(name => name, name => Path.Combine(packed.Work, name, "bin", "Debug", "net10.0", "publish", $"{name}-1.0.0.zip"));
        foreach (var (name, zip) in zips)
        {
            using var archive = ZipFile.OpenRead(zip);
            Assert.Equal([$"{name}.dll", $"{name}.pdb", "quintet-package.json", "quintet-qos.yaml"], archive.Entries.Select(e => e.FullName).Order(StringComparer.Ordinal));
        }

        var docs = Manifest(zips["Docs"]);
        Assert.Equal("Docs", docs.GetProperty("name").GetString());
        Assert.Equal("Docs.DocumentFactory", docs.GetProperty("components")[0].GetProperty("factory").GetString());
        Assert.Equal("Backed.CounterComponent", Manifest(zips["Backed"]).GetProperty("components")[0].GetProperty("class").GetString());
        output.WriteLine($"published at {watch.Elapsed.TotalSeconds:F0} s");

        await using (var cluster = await LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 2 }))
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            foreach (var zip in zips.Values)
            {
                await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(await File.ReadAllBytesAsync(zip)) }, deadline: DateTime.UtcNow.AddSeconds(60));
            }

            await Eventually.TrueAsync(
                async () => (await Task.WhenAll(cluster.Managers.Select(async m => (await new ComponentAdmin.ComponentAdminClient(m.Channel)
                    .ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10))).Packages.Count))).All(count => count == packages.Length),
                Settle,
                "every manager has loaded the four packages");

            // The QoS spec each zip carries is the one the classes run with.
            Assert.Contains("replication: primaryBackup", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Backed.CounterComponent" })).Spec, StringComparison.Ordinal);
            Assert.Contains("replication: active", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Active.CounterComponent" })).Spec, StringComparison.Ordinal);
            Assert.Contains("instancing: fresh", (await admin.GetQosAsync(new GetQosRequest { ClassName = "Docs.DocumentComponent" })).Spec, StringComparison.Ordinal);

            // Each generated client calls its component twice; the second call sees the first.
            var endpoints = string.Join(',', cluster.Managers.Select(m => m.GrpcEndpoint));
            foreach (var (name, _) in Components)
            {
                var client = Path.Combine(packed.Work, $"{name}.Client", "bin", "Debug", "net10.0", $"{name}.Client.dll");
                Assert.StartsWith("key-1 = 5 on manager-", await CallAsync(client, endpoints, "key-1", "5"), StringComparison.Ordinal);
                Assert.StartsWith("key-1 = 7 on manager-", await CallAsync(client, endpoints, "key-1", "2"), StringComparison.Ordinal);
            }

            // The class factory the build found names the instances clients create.
            var created = await new ComponentInstances.ComponentInstancesClient(cluster.Managers[1].Channel)
                .CreateInstanceAsync(new CreateInstanceRequest { Contract = "Docs.Document" }, deadline: DateTime.UtcNow.AddSeconds(30));
            Assert.Matches("^doc-[0-9a-f]{12}$", created.Key);
        }

        output.WriteLine($"deployed and called at {watch.Elapsed.TotalSeconds:F0} s");

        // The generated test: a cluster of three, the owner killed with kill -9, the state still there.
        var tests = await PackedTemplates.DotnetAsync(packed.Work, "test", "Backed.Tests/Backed.Tests.csproj", "--no-build");
        Assert.Contains("Passed!", tests, StringComparison.Ordinal);
        output.WriteLine($"generated test passed at {watch.Elapsed.TotalSeconds:F0} s");
    }

    /// <summary>Runs a generated client until the cluster serves the call (a first placement may meet a manager still loading).</summary>
    private static async Task<string> CallAsync(string client, string endpoints, string key, string amount)
    {
        var end = DateTime.UtcNow + Settle;
        while (true)
        {
            var (code, printed, error) = await Command.RunAsync("dotnet", [client, endpoints, key, amount], PackedTemplates.CommandBound);
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
