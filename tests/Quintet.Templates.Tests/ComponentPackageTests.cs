using System.IO.Compression;
using System.Text.Json;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Tests;
using Samples.BankAccount;

namespace Quintet.Templates.Tests;

/// <summary>
/// The package a component project builds for itself: the BankAccount sample, whose manifest is written by its build,
/// published to its zip, deployed, and serving as it did with its hand-written manifest; and the manifest tool's
/// refusals. In the templates' collection, whose cluster it deploys to.
/// </summary>
[Collection(PackedTemplatesGroup.Name)]
public sealed class ComponentPackageTests(PackedTemplates packed, ITestOutputHelper output)
{
    private static string Tool => Path.Combine(Repository.Root, "src", "Quintet.Build", "bin", Repository.Configuration, "net10.0", "Quintet.Build.dll");

    [Fact]
    public async Task The_published_BankAccount_zip_deploys_and_serves_as_before()
    {
        var folder = Path.Combine(packed.Root, "bankaccount");
        try
        {
            // The sample as this test run built it (the tests reference it): publish adds the zip and builds nothing.
            await packed.DotnetAsync(Repository.Root, null, "publish", "samples/BankAccount/BankAccount.csproj", "--no-build", "-c", Repository.Configuration, "-o", folder, "-nologo", "-v:m");
            var zip = Path.Combine(folder, "BankAccount-1.0.0.zip");
            using (var archive = ZipFile.OpenRead(zip))
            {
                Assert.Equal(["BankAccount.dll", "BankAccount.pdb", "quintet-package.json", "quintet-qos.yaml"], archive.Entries.Select(e => e.FullName).Order(StringComparer.Ordinal));
                using var manifest = JsonDocument.Parse(archive.GetEntry("quintet-package.json")!.Open());

                // What the hand-written manifest said, now written by the build from the class and its contract.
                var root = manifest.RootElement;
                Assert.Equal("BankAccount", root.GetProperty("name").GetString());
                Assert.Equal("1.0.0", root.GetProperty("version").GetString());
                Assert.Equal("BankAccount.dll", root.GetProperty("assembly").GetString());
                var component = Assert.Single(root.GetProperty("components").EnumerateArray());
                Assert.Equal("Samples.BankAccount.AccountComponent", component.GetProperty("class").GetString());
                Assert.Equal(["Samples.BankAccount.IAccount", "Samples.BankAccount.IAccountAdministration"], component.GetProperty("contracts").EnumerateArray().Select(c => c.GetString()));
                Assert.False(component.TryGetProperty("factory", out _));
            }

            var cluster = packed.Cluster;
            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            var deployed = await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(await File.ReadAllBytesAsync(zip)) }, deadline: DateTime.UtcNow.AddSeconds(60));
            Assert.Equal("BankAccount", deployed.Package.Name);
            Assert.Equal(["samples.bank.Account", "samples.bank.AccountAdministration"], deployed.Package.Classes.Single().Contracts);
            var qos = (await admin.GetQosAsync(new GetQosRequest { ClassName = "Samples.BankAccount.AccountComponent" })).Spec;
            Assert.Contains("replication: primaryBackup", qos, StringComparison.Ordinal);
            Assert.Contains("replicas: 2", qos, StringComparison.Ordinal);

            using var client = QuintetClient.Connect([.. cluster.Managers.Select(m => m.GrpcEndpoint)]);
            var account = client.GetComponent<IAccount>("acct-published");
            var deposited = await Eventually.ValueAsync<Balance?>(
                async () =>
                {
                    try
                    {
                        return await account.DepositAsync(new Amount { Value = 10_000 }, CancellationToken.None);
                    }
                    catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.Unimplemented)
                    {
                        return null;
                    }
                },
                balance => balance is not null,
                TimeSpan.FromSeconds(60),
                "the first deposit on the deployed package");
            Assert.Equal(10_000, deposited!.Value);
            Assert.Equal(7_450, (await account.WithdrawAsync(new Amount { Value = 2_550 }, CancellationToken.None)).Value);
            var refused = await Assert.ThrowsAsync<RpcException>(() => account.WithdrawAsync(new Amount { Value = 7_451 }, CancellationToken.None));
            Assert.Equal(StatusCode.FailedPrecondition, refused.StatusCode);
            Assert.Equal(2, (await account.GetBalanceAsync(new BalanceRequest(), CancellationToken.None)).Updates);
        }
        finally
        {
            if (Directory.Exists(folder))
            {
                Directory.Delete(folder, recursive: true);
            }
        }
    }

    [Fact]
    public async Task The_build_output_holds_the_same_manifest_as_the_zip()
    {
        // The tests deploy from the build output (PackageArchive.ForAssembly); it must be the package publish makes.
        var built = Path.Combine(Path.GetDirectoryName(typeof(AccountComponent).Assembly.Location)!, "BankAccount.package", "quintet-package.json");
        var output = Path.Combine(packed.Root, "manifest-" + Guid.NewGuid().ToString("N")[..8] + ".json");
        try
        {
            await Command.CheckedAsync("dotnet", ["exec", Tool, "manifest", "--assembly", typeof(AccountComponent).Assembly.Location, "--name", "BankAccount", "--version", "1.0.0", "--output", output], PackedTemplates.CommandBound);
            Assert.Equal(await File.ReadAllTextAsync(output), await File.ReadAllTextAsync(built));
        }
        finally
        {
            File.Delete(output);
        }
    }

    [Fact]
    public async Task An_assembly_without_a_component_class_fails_the_build_with_what_to_do()
    {
        var noComponents = typeof(Quintet.Security.ClusterTrust).Assembly.Location;
        var (code, printed, error) = await Command.RunAsync(
            "dotnet", ["exec", Tool, "manifest", "--assembly", noComponents, "--name", "Nothing", "--version", "1.0.0", "--output", Path.Combine(packed.Root, "never-written.json")], PackedTemplates.CommandBound);
        output.WriteLine(printed + error);
        Assert.Equal(1, code);
        Assert.Contains("error QNT0002: Quintet.Security has no component class", error, StringComparison.Ordinal);
        Assert.Contains("[ComponentContract]", error, StringComparison.Ordinal);
    }
}
