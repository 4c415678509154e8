using System.Security.Cryptography;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Quintet.Cli;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.Security;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>The gRPC port of a secured cluster: who gets in, with which role, and who the components see calling.</summary>
public class GrpcSecurityTests(SecuredClusterFixture fixture, ITestOutputHelper output) : IClassFixture<SecuredClusterFixture>
{
    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);

    private ManagerProcess First => fixture.Cluster.Managers[0];

    private LocalCertificates Certificates => fixture.Certificates;

    [Fact]
    public async Task Admin_api_without_credentials_is_unauthenticated_and_plaintext_gets_nowhere_but_health_is_open()
    {
        using var anonymous = Certificates.CreateChannel(First.GrpcEndpoint, clientCertificate: null);
        var refused = await Assert.ThrowsAsync<RpcException>(() => new ClusterAdmin.ClusterAdminClient(anonymous).ListManagersAsync(new ListManagersRequest(), deadline: Soon).ResponseAsync);
        output.WriteLine(refused.Status.Detail);
        Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
        Assert.Contains("ListManagers", refused.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("client certificate", refused.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("bearer token", refused.Status.Detail, StringComparison.Ordinal);

        // A load balancer's probe completes TLS and nothing more.
        var health = await new Health.HealthClient(anonymous).CheckAsync(new HealthCheckRequest(), deadline: Soon);
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, health.Status);

        Assert.StartsWith("https://", First.GrpcEndpoint, StringComparison.Ordinal);
        using var plaintext = GrpcChannel.ForAddress(First.GrpcEndpoint.Replace("https://", "http://", StringComparison.Ordinal));
        var failed = await Assert.ThrowsAsync<RpcException>(() => new ClusterAdmin.ClusterAdminClient(plaintext).ListManagersAsync(new ListManagersRequest(), deadline: Soon).ResponseAsync);
        output.WriteLine($"plaintext: {failed.StatusCode}: {failed.Status.Detail}");
        Assert.NotEqual(StatusCode.OK, failed.StatusCode);
    }

    [Fact]
    public async Task A_certificate_of_another_ca_is_refused_with_the_reason()
    {
        using var stranger = CertificateAuthority.Create("Some other CA");
        using var certificate = stranger.IssueClient("mallory", ["admin"]);
        using var channel = Certificates.CreateChannel(First.GrpcEndpoint, certificate);
        var refused = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(channel).ListPackagesAsync(new ListPackagesRequest(), deadline: Soon).ResponseAsync);
        output.WriteLine(refused.Status.Detail);
        Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
        Assert.Contains("not from a CA this cluster trusts", refused.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_reader_lists_but_neither_a_reader_nor_an_operator_deploys_and_an_admin_does()
    {
        using var reader = Client("rita", "reader");
        var managers = await new ClusterAdmin.ClusterAdminClient(reader).ListManagersAsync(new ListManagersRequest(), deadline: Soon);
        Assert.Equal(2, managers.Managers.Count);
        var packages = await new ComponentAdmin.ComponentAdminClient(reader).ListPackagesAsync(new ListPackagesRequest(), deadline: Soon);
        Assert.Contains(packages.Packages, p => p.Name == "CoordinationProbe");

        var counter = new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) };
        var byReader = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(reader).DeployPackageAsync(counter, deadline: Soon).ResponseAsync);
        output.WriteLine(byReader.Status.Detail);
        Assert.Equal(StatusCode.PermissionDenied, byReader.StatusCode);
        Assert.Contains("/quintet.admin.v1.ComponentAdmin/DeployPackage", byReader.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("the role admin", byReader.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("'rita'", byReader.Status.Detail, StringComparison.Ordinal);

        using var operatorChannel = Client("otto", "operator");
        var byOperator = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(operatorChannel).DeployPackageAsync(counter, deadline: Soon).ResponseAsync);
        Assert.Equal(StatusCode.PermissionDenied, byOperator.StatusCode);

        // Migrating is the operator's; a reader may not.
        var migrate = new MigrateInstanceRequest { ClassName = "Nope", Key = "k", ToManager = "manager-2" };
        var migrateByReader = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(reader).MigrateInstanceAsync(migrate, deadline: Soon).ResponseAsync);
        Assert.Equal(StatusCode.PermissionDenied, migrateByReader.StatusCode);
        Assert.Contains("admin, operator", migrateByReader.Status.Detail, StringComparison.Ordinal);
        var migrateByOperator = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(operatorChannel).MigrateInstanceAsync(migrate, deadline: Soon).ResponseAsync);
        Assert.Equal(StatusCode.NotFound, migrateByOperator.StatusCode);

        using var admin = Client("ada", "admin");
        var deployed = await new ComponentAdmin.ComponentAdminClient(admin).DeployPackageAsync(counter, deadline: DateTime.UtcNow.AddSeconds(60));
        Assert.Equal("Counter", deployed.Package.Name);
        await ClusterTest.WaitForPackagesAsync(fixture.Cluster.Managers, "CoordinationProbe", "Counter");
        await new ComponentAdmin.ComponentAdminClient(admin).UndeployPackageAsync(new UndeployPackageRequest { Name = "Counter" }, deadline: DateTime.UtcNow.AddSeconds(60));
        await ClusterTest.WaitForPackagesAsync(fixture.Cluster.Managers, "CoordinationProbe");
    }

    [Fact]
    public async Task A_token_with_roles_opens_what_its_roles_open_and_an_expired_or_foreign_token_is_refused()
    {
        using (var reader = Certificates.CreateChannel(First.GrpcEndpoint, null, fixture.Token("tom", ["reader"])))
        {
            var managers = await new ClusterAdmin.ClusterAdminClient(reader).ListManagersAsync(new ListManagersRequest(), deadline: Soon);
            Assert.Equal(2, managers.Managers.Count);
            var deploy = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(reader).UndeployPackageAsync(new UndeployPackageRequest { Name = "Nothing" }, deadline: Soon).ResponseAsync);
            Assert.Equal(StatusCode.PermissionDenied, deploy.StatusCode);
            Assert.Contains("'tom'", deploy.Status.Detail, StringComparison.Ordinal);
        }

        using (var expired = Certificates.CreateChannel(First.GrpcEndpoint, null, fixture.Token("tom", ["admin"], lifetime: TimeSpan.FromMinutes(-5))))
        {
            var refused = await Assert.ThrowsAsync<RpcException>(() => new ClusterAdmin.ClusterAdminClient(expired).ListManagersAsync(new ListManagersRequest(), deadline: Soon).ResponseAsync);
            output.WriteLine(refused.Status.Detail);
            Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
            Assert.Contains("bearer token was refused", refused.Status.Detail, StringComparison.Ordinal);
        }

        using (var foreign = Certificates.CreateChannel(First.GrpcEndpoint, null, fixture.Token("tom", ["admin"], key: RandomNumberGenerator.GetBytes(32))))
        {
            var refused = await Assert.ThrowsAsync<RpcException>(() => new ClusterAdmin.ClusterAdminClient(foreign).ListManagersAsync(new ListManagersRequest(), deadline: Soon).ResponseAsync);
            Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
        }
    }

    [Fact]
    public async Task A_component_call_forwarded_between_managers_carries_the_authenticated_caller_and_not_a_claimed_one()
    {
        using var alice = Certificates.IssueClientCertificate("alice", "auditor");

        // The header a client might set to pass for someone else: ignored from anyone but a manager.
        var claimed = CallCredentials.FromInterceptor((_, metadata) =>
        {
            metadata.Add("quintet-caller", "mallory");
            return Task.CompletedTask;
        });
        using var channel = GrpcChannel.ForAddress(First.GrpcEndpoint, new GrpcChannelOptions
        {
            HttpHandler = new SocketsHttpHandler { SslOptions = ClusterTls.ClientOptions(Certificates.Trust, alice) },
            Credentials = ChannelCredentials.Create(new SslCredentials(), claimed),
        });
        using var client = QuintetClient.Over(channel);

        // Over() never routes: a key owned by the other manager is passed on by the first.
        ProbeReply? forwarded = null;
        var forwardedKey = string.Empty;
        for (var i = 0; i < 40 && forwarded is null; i++)
        {
            var candidate = $"who-{i}";
            var reply = await ClusterTest.Eventually(() => client.GetComponent<IProbe>(candidate).WhereAsync(new ProbeRequest(), CancellationToken.None));
            if (reply.Manager != First.Name)
            {
                (forwarded, forwardedKey) = (reply, candidate);
            }
        }

        Assert.NotNull(forwarded);
        Assert.Equal("alice", forwarded.Result);
        Assert.Equal(["auditor"], forwarded.Details);

        // The .NET client with the cluster's CA and a certificate file routes to the owner directly.
        var (certificate, key) = Certificates.IssueClient("ada", "admin");
        using var routed = QuintetClient.Connect(new QuintetClientOptions
        {
            Endpoints = [First.GrpcEndpoint],
            CertificateAuthorityFile = Certificates.AuthorityFile,
            CertificateFile = certificate,
            KeyFile = key,
        });
        await routed.GetComponent<IProbe>(forwardedKey).WhereAsync(new ProbeRequest(), CancellationToken.None);
        var second = await routed.GetComponent<IProbe>(forwardedKey).WhereAsync(new ProbeRequest(), CancellationToken.None);
        Assert.Equal("ada", second.Result);
        Assert.Contains("is-admin", second.Details);
        Assert.Equal(forwarded.Manager, second.Manager);
        Assert.Equal(1, routed.Statistics.ForwardedCalls);
        Assert.Equal(1, routed.Statistics.DirectAttempts);

        // A token works for component calls too; no credentials do not.
        using var byToken = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [First.GrpcEndpoint], CertificateAuthorityFile = Certificates.AuthorityFile, BearerToken = fixture.Token("tina", []) });
        Assert.Equal("tina", (await byToken.GetComponent<IProbe>("who-token").WhereAsync(new ProbeRequest(), CancellationToken.None)).Result);
        using var nobody = QuintetClient.Connect(new QuintetClientOptions { Endpoints = [First.GrpcEndpoint], CertificateAuthorityFile = Certificates.AuthorityFile, FailoverBudget = TimeSpan.Zero });
        var refused = await Assert.ThrowsAsync<RpcException>(() => nobody.GetComponent<IProbe>("who-nobody").WhereAsync(new ProbeRequest(), CancellationToken.None));
        Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
    }

    [Fact]
    public async Task Internal_services_and_the_forwarded_route_refuse_a_client_certificate_even_an_admins()
    {
        var admin = First.Channel.CreateCallInvoker();
        var internalCall = new Method<byte[], byte[]>(MethodType.Unary, "quintet.internal.v1.PackageDistribution", "ListDeployed", Bytes, Bytes);
        var refused = await Assert.ThrowsAsync<RpcException>(() => admin.AsyncUnaryCall(internalCall, null, new CallOptions(deadline: Soon), []).ResponseAsync);
        output.WriteLine(refused.Status.Detail);
        Assert.Equal(StatusCode.PermissionDenied, refused.StatusCode);
        Assert.Contains("internal to the cluster", refused.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("ListDeployed", refused.Status.Detail, StringComparison.Ordinal);

        var forwardedRoute = new Method<byte[], byte[]>(MethodType.Unary, "quintet.internal.v1.Forward", "quintet.tests.Probe/Where", Bytes, Bytes);
        var forwarded = await Assert.ThrowsAsync<RpcException>(() => admin.AsyncUnaryCall(forwardedRoute, null, new CallOptions(new Metadata { { "quintet-key", "k" } }, Soon), []).ResponseAsync);
        Assert.Equal(StatusCode.PermissionDenied, forwarded.StatusCode);

        // The managers' own certificate opens them: what managers use between themselves.
        using var manager = CertificateFiles.LoadWithKey(Path.Combine(Certificates.Directory, CertificateFiles.ManagerCertificate), Path.Combine(Certificates.Directory, CertificateFiles.ManagerKey));
        using var asManager = Certificates.CreateChannel(First.GrpcEndpoint, manager);
        await asManager.CreateCallInvoker().AsyncUnaryCall(internalCall, null, new CallOptions(deadline: Soon), []).ResponseAsync;
    }

    [Fact]
    public async Task The_cli_with_ca_cert_and_key_lists_the_managers_and_says_why_it_is_refused()
    {
        var endpoint = fixture.Cluster.Managers[1].GrpcEndpoint;
        var (certificate, key) = Certificates.IssueClient("carl", "reader");
        using var table = new StringWriter();
        using var errors = new StringWriter();
        var code = await QuintetCli.RunAsync(["cluster", "show", "--endpoint", endpoint, "--ca", Certificates.AuthorityFile, "--cert", certificate, "--key", key], table, errors);
        output.WriteLine(table.ToString() + errors);
        Assert.Equal(ExitCodes.Ok, code);
        foreach (var manager in fixture.Cluster.Managers)
        {
            Assert.Contains(manager.Name, table.ToString(), StringComparison.Ordinal);
        }

        using var anonymousErrors = new StringWriter();
        Assert.Equal(ExitCodes.Denied, await QuintetCli.RunAsync(["cluster", "show", "--endpoint", endpoint, "--ca", Certificates.AuthorityFile], TextWriter.Null, anonymousErrors));
        Assert.Contains("--cert", anonymousErrors.ToString(), StringComparison.Ordinal);

        using var readerErrors = new StringWriter();
        Assert.Equal(ExitCodes.Denied, await QuintetCli.RunAsync(["component", "undeploy", "Nothing", "--endpoint", endpoint, "--ca", Certificates.AuthorityFile, "--cert", certificate, "--key", key], TextWriter.Null, readerErrors));
        Assert.Contains("the role admin", readerErrors.ToString(), StringComparison.Ordinal);

        // The CA of another cluster: the manager is refused at the handshake.
        using var stranger = LocalCertificates.Create();
        using var tlsErrors = new StringWriter();
        Assert.Equal(ExitCodes.TlsFailed, await QuintetCli.RunAsync(["cluster", "show", "--endpoint", endpoint, "--ca", stranger.AuthorityFile, "--cert", certificate, "--key", key], TextWriter.Null, tlsErrors));
        output.WriteLine(tlsErrors.ToString());
        Assert.Contains("TLS handshake", tlsErrors.ToString(), StringComparison.Ordinal);
    }

    private static DateTime Soon => DateTime.UtcNow.AddSeconds(30);

    private GrpcChannel Client(string user, params string[] roles)
    {
        var certificate = Certificates.IssueClientCertificate(user, roles);
        return Certificates.CreateChannel(First.GrpcEndpoint, certificate);
    }
}
