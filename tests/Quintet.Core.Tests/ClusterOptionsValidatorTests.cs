using Quintet.Core.Cluster;

namespace Quintet.Core.Tests;

public class ClusterOptionsValidatorTests
{
    private static readonly ClusterOptionsValidator Validator = new();

    [Fact]
    public void Defaults_are_valid()
    {
        var result = Validator.Validate(null, new ClusterOptions());
        Assert.True(result.Succeeded, result.FailureMessage);
    }

    [Fact]
    public void Every_failure_names_its_setting()
    {
        var options = new ClusterOptions
        {
            Name = "bad name",
            Host = "",
            Port = -1,
            Seeds = ["127.0.0.1:4054", "nonsense"],
            FailureDetector = new FailureDetectorOptions
            {
                HeartbeatInterval = TimeSpan.FromSeconds(1),
                AcceptableHeartbeatPause = TimeSpan.FromMilliseconds(10),
                Threshold = double.NaN,
            },
            Downing = new DowningOptions { StableAfter = TimeSpan.Zero, Managers = -3 },
        };

        var failures = Validator.Validate(null, options).Failures!.ToList();

        Assert.Collection(
            failures,
            f => Assert.StartsWith("Quintet:Cluster:Name:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:Host:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:Port:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:Seeds:1:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:FailureDetector:AcceptableHeartbeatPause:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:FailureDetector:Threshold:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:Downing:StableAfter:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Cluster:Downing:Managers:", f, StringComparison.Ordinal));
    }

    [Fact]
    public void The_group_port_must_be_a_port_of_its_own()
    {
        var outOfRange = Validator.Validate(null, new ClusterOptions { GroupPort = 70000 }).Failures!.ToList();
        var shared = Validator.Validate(null, new ClusterOptions { Port = 4060, GroupPort = 4060 }).Failures!.ToList();
        var unknown = Validator.Validate(null, new ClusterOptions { GroupTransport = (GroupTransportKind)7 }).Failures!.ToList();

        Assert.Contains("outside 0-65535", Assert.Single(outOfRange), StringComparison.Ordinal);
        Assert.StartsWith("Quintet:Cluster:GroupPort: 4060 is also Quintet:Cluster:Port", Assert.Single(shared), StringComparison.Ordinal);
        Assert.StartsWith("Quintet:Cluster:GroupTransport:", Assert.Single(unknown), StringComparison.Ordinal);
        Assert.True(Validator.Validate(null, new ClusterOptions { Port = 0, GroupPort = 0 }).Succeeded);
    }

    [Fact]
    public void With_security_on_a_plaintext_seed_address_names_the_mismatch()
    {
        using var certificates = Quintet.TestingHost.LocalCertificates.Create();
        using var security = Quintet.Security.ClusterSecurity.Load(new Quintet.Security.SecurityOptions { CertificatesDirectory = certificates.Directory });
        var validator = new ClusterOptionsValidator(security);
        var options = new ClusterOptions { Name = "quintet", Seeds = ["127.0.0.1:4054", "akka.ssl.tcp://quintet@127.0.0.1:4055", "akka.tcp://quintet@127.0.0.1:4056"] };

        var failure = Assert.Single(validator.Validate(null, options).Failures!);

        Assert.StartsWith("Quintet:Cluster:Seeds:2: 'akka.tcp://quintet@127.0.0.1:4056' is a plaintext address, but this manager's cluster port uses TLS", failure, StringComparison.Ordinal);
    }
}
