using System.Text.Json;
using Quintet.Cli.Configuration;
using Quintet.TestingHost;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary>Saved contexts against a real secured manager: the context's certificate is what the manager sees.</summary>
public sealed class SavedContextClusterTests(ITestOutputHelper log)
{
    [Fact]
    public async Task A_context_with_a_certificate_reaches_a_secured_manager_and_its_role_decides_what_it_may_do()
    {
        using var certificates = LocalCertificates.Create();
        var options = new LocalClusterOptions
        {
            InitialManagers = 1,
            Certificates = certificates,
            LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-tests", $"cli-contexts-{Guid.NewGuid():N}"[..24]),
        };
        await using var cluster = await LocalCluster.StartAsync(options);
        var endpoint = cluster.Managers[0].GrpcEndpoint;
        var (adminCertificate, adminKey) = certificates.IssueClient("olga", "operator");
        var (readerCertificate, readerKey) = certificates.IssueClient("rita", "reader");
        var folder = Directory.CreateTempSubdirectory("quintet-cli-contexts-").FullName;
        var environment = new Dictionary<string, string> { [CliEnvironment.Config] = Path.Combine(folder, "config.json") };

        async Task<(int Code, string Output, string Error)> Cli(params string[] args)
        {
            var result = await RunAsync(environment, args);
            log.WriteLine($"$ quintet {string.Join(' ', args)} -> {result.ExitCode}\n{result.Output}{result.Error}");
            return result;
        }

        try
        {
            Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "ops", "--endpoint", endpoint, "--ca", certificates.AuthorityFile, "--cert", adminCertificate, "--key", adminKey)).Code);
            Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "audit", "--endpoint", endpoint, "--ca", certificates.AuthorityFile, "--cert", readerCertificate, "--key", readerKey)).Code);

            // No endpoint, no credentials on the command line: the current context's.
            var (shown, cluster1, _) = await Cli("cluster", "show", "-o", "json");
            Assert.Equal(ExitCodes.Ok, shown);
            using (var json = JsonDocument.Parse(cluster1))
            {
                Assert.Equal("MANAGER_STATE_UP", json.RootElement.GetProperty("managers")[0].GetProperty("state").GetString());
            }

            var (group, status, _) = await Cli("diagnostics", "group", "-o", "json");
            Assert.Equal(ExitCodes.Ok, group);
            using (var json = JsonDocument.Parse(status))
            {
                Assert.True(long.Parse(json.RootElement.GetProperty("viewId").GetString()!, System.Globalization.CultureInfo.InvariantCulture) > 0, status);
                Assert.Single(json.RootElement.GetProperty("members").EnumerateArray());
            }

            Assert.Equal(ExitCodes.Ok, (await Cli("diagnostics", "echo")).Code);

            // The operator may not undeploy (admin), and the audit context's reader may not move instances: refused by role.
            var (undeploy, _, undeployError) = await Cli("component", "undeploy", "Nothing");
            Assert.Equal(ExitCodes.Denied, undeploy);
            Assert.Contains("admin", undeployError, StringComparison.Ordinal);
            var (migrate, _, migrateError) = await Cli("component", "migrate", "X", "k", "--to", "manager-1", "--context", "audit");
            Assert.Equal(ExitCodes.Denied, migrate);
            Assert.Contains("operator", migrateError, StringComparison.Ordinal);

            // Another endpoint while the context is merely current: its certificate is not sent, so the manager does not know the caller.
            var (elsewhere, _, elsewhereError) = await Cli("component", "list", "--endpoint", endpoint, "--ca", certificates.AuthorityFile);
            Assert.Equal(ExitCodes.Denied, elsewhere);
            Assert.Contains("does not know who you are", elsewhereError, StringComparison.Ordinal);

            // Named, the context's certificate goes with it.
            Assert.Equal(ExitCodes.Ok, (await Cli("component", "list", "--endpoint", endpoint, "--context", "audit")).Code);
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }
}
