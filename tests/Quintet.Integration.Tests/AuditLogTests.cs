using System.Security.Cryptography;
using System.Text.Json;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Cli;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>The audit log as an administrator reads it: actions and their outcomes, from any manager, durable in the replicated store.</summary>
public class AuditLogTests(ITestOutputHelper output)
{
    private static DateTime Soon => DateTime.UtcNow.AddSeconds(60);

    private static Audit.AuditClient AuditOf(ManagerProcess manager) => new(manager.Channel);

    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    [Fact]
    public Task Every_action_is_recorded_before_and_after_it_runs_and_any_manager_lists_every_managers_entries() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var zip = ComponentCallTests.CounterPackage();
            var headers = new Metadata { { "quintet-caller", "ops-script" } };
            await Admin(cluster.Managers[0]).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(zip) }, headers, deadline: Soon);
            var missing = await Assert.ThrowsAsync<RpcException>(() => Admin(cluster.Managers[1]).UndeployPackageAsync(new UndeployPackageRequest { Name = "NoSuchPackage" }, deadline: Soon).ResponseAsync);
            Assert.Equal(StatusCode.NotFound, missing.StatusCode);

            // Read from the third manager: it reads the first two managers' streams from its replica of the store.
            var listed = await AuditOf(cluster.Managers[2]).ListAuditEntriesAsync(new ListAuditEntriesRequest(), deadline: Soon);
            output.WriteLine(listed.ToString());
            Assert.Empty(listed.Unreadable);
            var deploys = listed.Entries.Where(e => e.Action == "quintet.admin.v1.ComponentAdmin/DeployPackage" && e.Manager == cluster.Managers[0].Name).ToList();
            Assert.Equal(["OK", "STARTED"], deploys.Select(e => e.Result));
            var sha = Convert.ToHexStringLower(SHA256.HashData(zip));
            Assert.All(deploys, e => Assert.Equal(sha, e.PackageSha256));
            Assert.All(deploys, e => Assert.Equal("ops-script", e.Caller));
            Assert.All(deploys, e => Assert.False(e.Authenticated));
            Assert.All(deploys, e => Assert.Contains("127.0.0.1", e.Peer, StringComparison.Ordinal));
            Assert.Contains("package Counter", deploys[0].Target, StringComparison.Ordinal);
            var undeploy = listed.Entries.Where(e => e.Action.EndsWith("/UndeployPackage", StringComparison.Ordinal) && e.Manager == cluster.Managers[1].Name).ToList();
            Assert.Equal(["NotFound", "STARTED"], undeploy.Select(e => e.Result));
            Assert.Contains("NoSuchPackage", undeploy[0].Message, StringComparison.Ordinal);
            Assert.DoesNotContain(listed.Entries, e => e.Action.EndsWith("/ListPackages", StringComparison.Ordinal));

            // The first manager's stream was read (taken over) by the third: its next action is still recorded.
            await Admin(cluster.Managers[0]).UndeployPackageAsync(new UndeployPackageRequest { Name = "Counter" }, deadline: Soon);
            var after = await AuditOf(cluster.Managers[1]).ListAuditEntriesAsync(new ListAuditEntriesRequest { Limit = 3 }, deadline: Soon);
            Assert.Equal(3, after.Entries.Count);
            Assert.Equal("quintet.admin.v1.ComponentAdmin/UndeployPackage", after.Entries[0].Action);
            Assert.Equal(cluster.Managers[0].Name, after.Entries[0].Manager);
            Assert.Equal("OK", after.Entries[0].Result);

            // The CLI prints the same, as JSON for scripts.
            using var json = new StringWriter();
            using var errors = new StringWriter();
            Assert.Equal(ExitCodes.Ok, await QuintetCli.RunAsync(["audit", "--endpoint", cluster.Managers[2].GrpcEndpoint, "--output", "json", "--caller", "ops-script"], json, errors));
            using var document = JsonDocument.Parse(json.ToString());
            var entries = document.RootElement.GetProperty("entries").EnumerateArray().ToList();
            Assert.Equal(2, entries.Count);
            Assert.All(entries, e => Assert.Equal(sha, e.GetProperty("packageSha256").GetString()));

            var badLimit = await Assert.ThrowsAsync<RpcException>(() => AuditOf(cluster.Managers[0]).ListAuditEntriesAsync(new ListAuditEntriesRequest { Limit = 20_000 }, deadline: Soon).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, badLimit.StatusCode);
        });
}
