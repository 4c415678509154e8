using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Cli;
using Quintet.Client;
using Quintet.Integration.Tests.Workloads;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// Component roles on a secured cluster: the package declares them, an administrator assigns members on one manager,
/// and every manager, one that joins later included, enforces the same assignments.
/// </summary>
public class ComponentRolesTests(ITestOutputHelper output)
{
    private const string Package = "WorkloadTarget";

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(60);

    [Fact]
    public async Task A_role_member_added_on_one_manager_is_admitted_on_every_manager_and_refused_again_once_removed()
    {
        using var certificates = LocalCertificates.Create();
        var options = ClusterTest.Options(3);
        options.Certificates = certificates;
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            var (a, b, c) = (cluster.Managers[0], cluster.Managers[1], cluster.Managers[2]);
            await new ComponentAdmin.ComponentAdminClient(a.Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(TellerComponent).Assembly)) }, deadline: Soon);
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, Package);

            // The admin API shows what each operation answers to.
            var listed = (await new ComponentAdmin.ComponentAdminClient(b.Channel).ListPackagesAsync(new ListPackagesRequest(), deadline: Soon)).Packages.Single(p => p.Name == Package);
            Assert.Equal(["auditor", "branch-manager", "teller"], listed.Roles);
            var teller = listed.Classes.Single(k => k.ClassName.EndsWith(nameof(TellerComponent), StringComparison.Ordinal));
            Assert.Equal(["auditor"], teller.Operations.Single(o => o.Operation == "Audit").Roles);
            Assert.Equal(["teller", "auditor"], teller.Operations.Single(o => o.Operation == "Deposit").Roles);

            using var bobCertificate = certificates.IssueClientCertificate("bob", "clerk");
            using var bobOnA = certificates.CreateChannel(a.GrpcEndpoint, bobCertificate);
            using var bobOnB = certificates.CreateChannel(b.GrpcEndpoint, bobCertificate);
            using var bobOnC = certificates.CreateChannel(c.GrpcEndpoint, bobCertificate);

            // Not a member: refused, naming the operation, the roles that would open it and the command that assigns them.
            var refused = await RefusedAsync(() => DepositAsync(bobOnA));
            output.WriteLine(refused.Status.Detail);
            Assert.Contains("tests.workloads.Teller/Deposit", refused.Status.Detail, StringComparison.Ordinal);
            Assert.Contains("teller, auditor", refused.Status.Detail, StringComparison.Ordinal);
            Assert.Contains("quintet roles add WorkloadTarget teller user:bob", refused.Status.Detail, StringComparison.Ordinal);

            // A reader may list the assignments but not change them.
            var (readerCertificate, readerKey) = certificates.IssueClient("rita", "reader");
            string[] asReader = ["--endpoint", a.GrpcEndpoint, "--ca", certificates.AuthorityFile, "--cert", readerCertificate, "--key", readerKey];
            using var readerErrors = new StringWriter();
            Assert.Equal(ExitCodes.Denied, await QuintetCli.RunAsync(["roles", "add", Package, "teller", "user:bob", .. asReader], TextWriter.Null, readerErrors));
            Assert.Contains("needs the role admin", readerErrors.ToString(), StringComparison.Ordinal);
            using var readerChannel = certificates.CreateChannel(a.GrpcEndpoint, certificates.LoadClient("rita"));
            var readerRefused = await Assert.ThrowsAsync<RpcException>(() => new ComponentRoles.ComponentRolesClient(readerChannel).SetRoleMembersAsync(
                new RoleMembersRequest { Package = Package, Role = "teller", Members = { "user:rita" } }, deadline: Soon).ResponseAsync);
            Assert.Equal(StatusCode.PermissionDenied, readerRefused.StatusCode);
            Assert.Equal(ExitCodes.Ok, await QuintetCli.RunAsync(["roles", "list", .. asReader], TextWriter.Null, TextWriter.Null));

            // An administrator adds bob on manager A, with the CLI.
            var (adminCertificate, adminKey) = certificates.IssueClient("ada", "admin");
            string[] asAdmin = ["--endpoint", a.GrpcEndpoint, "--ca", certificates.AuthorityFile, "--cert", adminCertificate, "--key", adminKey];
            using var added = new StringWriter();
            using var addErrors = new StringWriter();
            Assert.True(ExitCodes.Ok == await QuintetCli.RunAsync(["roles", "add", Package, "teller", "user:bob", .. asAdmin], added, addErrors), addErrors.ToString());
            Assert.Contains("user:bob", added.ToString(), StringComparison.Ordinal);

            // In force on B and C, by the same assignments: the component sees bob in its package's role.
            foreach (var channel in new[] { bobOnB, bobOnC })
            {
                var reply = await AdmittedAsync(() => DepositAsync(channel));
                Assert.Equal("bob", reply.Caller);
                Assert.Equal(["teller"], reply.PackageRoles);
                Assert.True(reply.IsTeller);
            }

            // Teller opens Deposit, not Audit, which only auditors may call.
            await RefusedAsync(() => AuditAsync(bobOnB));

            // A member by a role of its credential: every caller whose certificate carries the OU 'audit'.
            var auditors = await new ComponentRoles.ComponentRolesClient(c.Channel).AddRoleMembersAsync(
                new RoleMembersRequest { Package = Package, Role = "auditor", Members = { "role:audit" } }, deadline: Soon);
            Assert.Equal(["role:audit"], auditors.Members);
            using var carolCertificate = certificates.IssueClientCertificate("carol", "audit");
            using var carolOnA = certificates.CreateChannel(a.GrpcEndpoint, carolCertificate);
            Assert.Equal("carol", (await AdmittedAsync(() => AuditAsync(carolOnA))).Caller);

            // Every change and the refused call are in the audit log.
            var audit = await Quintet.Tests.Eventually.ValueAsync(
                async () => (await new Audit.AuditClient(b.Channel).ListAuditEntriesAsync(new ListAuditEntriesRequest(), deadline: Soon)).Entries,
                entries => entries.Any(e => e.Action == "tests.workloads.Teller/Deposit" && e.Result == nameof(StatusCode.PermissionDenied) && e.Caller == "bob"),
                TimeSpan.FromSeconds(30),
                "the refused call to be in the audit log");
            var changes = audit.Where(e => e.Action == "quintet.admin.v1.ComponentRoles/AddRoleMembers" && e.Caller == "ada").ToList();
            Assert.Equal(["OK", "STARTED"], changes.Select(e => e.Result));
            Assert.Contains("user:bob", changes[0].Target, StringComparison.Ordinal);
            Assert.Contains(audit, e => e.Action == "quintet.admin.v1.ComponentRoles/SetRoleMembers" && e.Caller == "rita" && e.Result == nameof(StatusCode.PermissionDenied));

            // A manager that joins later gets the assignments by state transfer and enforces them.
            var d = await cluster.AddManagerAsync();
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, Package);
            using var bobOnD = certificates.CreateChannel(d.GrpcEndpoint, bobCertificate);
            Assert.Equal("bob", (await AdmittedAsync(() => DepositAsync(bobOnD))).Caller);
            using var eveOnD = certificates.CreateChannel(d.GrpcEndpoint, certificates.IssueClientCertificate("eve", "clerk"));
            await RefusedAsync(() => DepositAsync(eveOnD));
            var onD = await new ComponentRoles.ComponentRolesClient(d.Channel).ListRoleAssignmentsAsync(new ListRoleAssignmentsRequest { Package = Package }, deadline: Soon);
            Assert.Equal(["user:bob"], Assert.Single(onD.Packages).Roles.Single(r => r.Role == "teller").Members);

            // Removed on B: refused again everywhere.
            var removed = await new ComponentRoles.ComponentRolesClient(b.Channel).RemoveRoleMembersAsync(
                new RoleMembersRequest { Package = Package, Role = "teller", Members = { "user:bob" } }, deadline: Soon);
            Assert.Empty(removed.Members);
            foreach (var channel in new[] { bobOnA, bobOnC, bobOnD })
            {
                await Quintet.Tests.Eventually.ValueAsync(
                    async () => (await Record.ExceptionAsync(() => DepositAsync(channel)) as RpcException)?.StatusCode,
                    status => status == StatusCode.PermissionDenied,
                    TimeSpan.FromSeconds(10),
                    "bob to be refused again once removed");
            }
        });
    }

    private static async Task<TellerReply> DepositAsync(GrpcChannel channel)
    {
        using var client = QuintetClient.Over(channel);
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        return await client.GetComponent<ITeller>("branch-1").DepositAsync(new TellerRequest { Amount = 5 }, deadline.Token);
    }

    private static async Task<TellerReply> AuditAsync(GrpcChannel channel)
    {
        using var client = QuintetClient.Over(channel);
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        return await client.GetComponent<ITeller>("branch-1").AuditAsync(new TellerRequest(), deadline.Token);
    }

    /// <summary>The refusal of a call, once the manager holds the assignments (before, it answers UNAVAILABLE).</summary>
    private static async Task<RpcException> RefusedAsync(Func<Task<TellerReply>> call)
    {
        var refusal = await Quintet.Tests.Eventually.ValueAsync(
            async () => await Record.ExceptionAsync(call) as RpcException,
            e => e?.StatusCode != StatusCode.Unavailable,
            TimeSpan.FromSeconds(30),
            "the manager to hold the role assignments");
        Assert.NotNull(refusal);
        Assert.Equal(StatusCode.PermissionDenied, refusal.StatusCode);
        return refusal;
    }

    /// <summary>
    /// The call's answer once admitted: a manager applies a change at its place in the order, a few milliseconds after
    /// the manager that made it, and one just started holds the assignments once it has joined them (UNAVAILABLE until then).
    /// </summary>
    private static Task<T> AdmittedAsync<T>(Func<Task<T>> call) =>
        Quintet.Tests.Eventually.SucceedsAsync(call, TimeSpan.FromSeconds(30), "the call to be admitted", interval: TimeSpan.FromMilliseconds(200));
}
