using System.Security.Cryptography.X509Certificates;
using Akka.Actor;
using Akka.Actor.Setup;
using Akka.Configuration;
using Akka.Remote.Transport.DotNetty;
using Google.Protobuf;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.Security;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// Managers secured with certificates: the cluster port and the group port use mutual TLS, and a peer without a manager
/// certificate of the cluster's CA never gets in.
/// </summary>
public sealed class ClusterTlsTests(ITestOutputHelper output)
{
    /// <summary>How long a refused joiner is watched not to get in: several of its join retries (every 2 s).</summary>
    private static readonly TimeSpan RefusalWindow = TimeSpan.FromSeconds(10);

    /// <summary>What the survivors log for the foreign CA's, the expired and the client certificate, in that order.</summary>
    private static readonly string[] RefusalReasons = ["is not from a CA this cluster trusts", "expired at", "is a client certificate, not a manager's"];

    [Fact]
    public async Task A_secured_cluster_forms_over_TLS_and_its_managers_group_and_component_calls_work()
    {
        using var certificates = LocalCertificates.Create();
        var options = ClusterTest.Options(3);
        options.Certificates = certificates;
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            Assert.All(cluster.Managers, m => Assert.StartsWith("akka.ssl.tcp://", m.ClusterAddress, StringComparison.Ordinal));
            await cluster.WaitForGroupViewAsync(cluster.Managers);

            var admin = new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel);
            await admin.DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");

            // Spread over the managers (the directory and the forwarding between managers are both on the way), and all
            // answered.
            using var client = QuintetClient.Over(cluster.Managers[1].Channel);
            var served = new HashSet<string>(StringComparer.Ordinal);
            for (var key = 0; key < 12; key++)
            {
                var counter = client.GetComponent<ICounter>($"key-{key}");
                var first = await ClusterTest.Eventually(() => counter.AddAsync(new AddRequest { Amount = key }, CancellationToken.None));
                var second = await counter.AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None);
                Assert.Equal(key + 1, second.Value);
                served.Add(first.Manager);
            }

            output.WriteLine($"served by: {string.Join(", ", served.Order())}");
            foreach (var manager in cluster.Managers)
            {
                Assert.DoesNotContain(await LogOfAsync(manager), l => l.Contains("TLS: refused", StringComparison.Ordinal));
            }
        });
    }

    [Fact]
    public async Task Managers_with_another_CAs_certificate_an_expired_one_a_client_certificate_or_none_cannot_join()
    {
        // Valid since days, so that it can issue an expired manager certificate of the cluster itself.
        using var certificates = LocalCertificates.Create(authority: CertificateAuthority.Create("Quintet test CA", notBefore: DateTimeOffset.UtcNow.AddDays(-10)));
        var options = ClusterTest.Options(3);
        options.Certificates = certificates;
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            var survivors = cluster.Managers.ToList();
            var view = await ViewAsync(cluster, survivors);

            // The four try at once, and the view is watched once for all of them: each refusal is logged first (so the
            // attempt was made), then the survivors' view must stay the same through several join retries.
            // A manager with a certificate of its own CA. It trusts the cluster's CA too (a CA's certificate is no
            // secret), so the handshake gets as far as the survivors' check of its certificate.
            using var foreign = LocalCertificates.Create(authority: CertificateAuthority.Create("Another CA"));
            CertificateFiles.AppendCertificate(certificates.Authority.Certificate, foreign.AuthorityFile);
            options.Certificates = foreign;
            var rogue = await cluster.AddManagerAsync();

            // A manager does not start with an expired certificate or a client certificate of its own, so these two
            // join from this process, as a peer that skips that check would.
            using var expired = certificates.Authority.IssueManager("expired", ["127.0.0.1"], validity: TimeSpan.FromDays(1), notBefore: DateTimeOffset.UtcNow.AddDays(-5));
            await using var expiredJoiner = await JoinFromHereAsync(options.ClusterName, expired, survivors);
            using var client = certificates.Authority.IssueClient("mallory", ["admin"]);
            await using var clientJoiner = await JoinFromHereAsync(options.ClusterName, client, survivors);

            // A manager with security off: its seeds are the survivors' host and port, so it tries them in plaintext.
            // Every seed the testing host would pass (the survivors' and the rogue's TLS addresses) is replaced.
            options.Certificates = null;
            for (var i = 0; i < cluster.Active.Count; i++)
            {
                options.Settings[$"Quintet:Cluster:Seeds:{i}"] = $"127.0.0.1:{survivors[i % survivors.Count].ClusterPort}";
            }

            var open = await cluster.AddManagerAsync();
            foreach (var reason in RefusalReasons)
            {
                await AssertRefusalLoggedAsync(survivors, reason);
            }

            await AssertViewStaysAsync(cluster, survivors, view);
            Assert.DoesNotContain(await LogOfAsync(open), l => l.Contains("This manager is Up", StringComparison.Ordinal));
            Assert.DoesNotContain(await LogOfAsync(rogue), l => l.Contains("This manager is Up", StringComparison.Ordinal));
            await cluster.KillAsync(rogue);
            output.WriteLine(cluster.DescribeLogs(15));
        });
    }

    /// <summary>One of the survivors logged the refusal on the cluster port with <paramref name="reason"/>.</summary>
    private async Task AssertRefusalLoggedAsync(IReadOnlyList<ManagerProcess> survivors, string reason)
    {
        await Quintet.Tests.Eventually.TrueAsync(
            async () => (await Task.WhenAll(survivors.Select(LogOfAsync))).SelectMany(l => l).Any(l =>
                l.Contains("TLS: refused the peer", StringComparison.Ordinal)
                && l.Contains("on the cluster port", StringComparison.Ordinal)
                && l.Contains(reason, StringComparison.Ordinal)),
            TimeSpan.FromSeconds(30),
            $"a survivor to log the refusal on the cluster port with '{reason}'");
        var lines = (await Task.WhenAll(survivors.Select(LogOfAsync))).SelectMany(l => l).Where(l => l.Contains(reason, StringComparison.Ordinal));
        output.WriteLine(string.Join('\n', lines.Take(3)));
    }

    /// <summary>The survivors' view stays <paramref name="view"/> for <see cref="RefusalWindow"/>.</summary>
    private static async Task AssertViewStaysAsync(LocalCluster cluster, IReadOnlyList<ManagerProcess> survivors, string view)
    {
        var until = DateTime.UtcNow + RefusalWindow;
        while (DateTime.UtcNow < until)
        {
            Assert.Equal(view, await ViewAsync(cluster, survivors));
            await Task.Delay(TimeSpan.FromSeconds(1));
        }
    }

    /// <summary>What every survivor sees, as one line each: members, states, reachability and uids.</summary>
    private static async Task<string> ViewAsync(LocalCluster cluster, IReadOnlyList<ManagerProcess> survivors)
    {
        var views = await Task.WhenAll(survivors.Select(async m =>
        {
            var response = await cluster.ViewOfAsync(m);
            return $"{m.Name}: " + string.Join(", ", response.Managers.OrderBy(x => x.Address, StringComparer.Ordinal).Select(x => $"{x.Address}#{x.Uid} {x.State} reachable={x.Reachable}"));
        }));
        return string.Join('\n', views);
    }

    private static async Task<IReadOnlyList<string>> LogOfAsync(ManagerProcess manager)
    {
        await using var stream = new FileStream(manager.LogFile, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        using var reader = new StreamReader(stream);
        return (await reader.ReadToEndAsync()).Split('\n');
    }

    /// <summary>
    /// An actor system in this process that presents <paramref name="certificate"/> on a TLS cluster port, trusts any
    /// peer, and asks the <paramref name="seeds"/> to let it join, again and again.
    /// </summary>
    private static Task<AsyncDisposableSystem> JoinFromHereAsync(string clusterName, X509Certificate2 certificate, IReadOnlyList<ManagerProcess> seeds)
    {
        var config = ConfigurationFactory.ParseString("""
            akka {
              loglevel = WARNING
              stdout-loglevel = OFF
              actor.provider = cluster
              remote.dot-netty.tcp {
                hostname = "127.0.0.1"
                port = 0
                enable-ssl = on
              }
              cluster.retry-unsuccessful-join-after = 1s
            }
            """);
        var presented = X509CertificateLoader.LoadPkcs12(certificate.Export(X509ContentType.Pkcs12), password: null);
        var system = ActorSystem.Create(clusterName, ActorSystemSetup.Create(
            BootstrapSetup.Create().WithConfig(config),
            new DotNettySslSetup(presented, suppressValidation: false, requireMutualAuthentication: true, (_, _, _, _, _) => true)));
        Akka.Cluster.Cluster.Get(system).JoinSeedNodes(seeds.Select(s => Address.Parse(s.ClusterAddress)));
        return Task.FromResult(new AsyncDisposableSystem(system, presented));
    }

    private sealed class AsyncDisposableSystem(ActorSystem system, X509Certificate2 certificate) : IAsyncDisposable
    {
        public async ValueTask DisposeAsync()
        {
            await system.Terminate();
            certificate.Dispose();
        }
    }
}
