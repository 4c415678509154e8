using Quintet.Core.Cluster;

namespace Quintet.Core.Tests;

public class AkkaConfigTests
{
    [Fact]
    public void Options_reach_the_transport_failure_detector_and_split_brain_resolver()
    {
        var options = new ClusterOptions
        {
            Host = "127.0.0.5",
            Port = 4999,
            FailureDetector = new FailureDetectorOptions
            {
                HeartbeatInterval = TimeSpan.FromMilliseconds(250),
                AcceptableHeartbeatPause = TimeSpan.FromMilliseconds(1500),
                Threshold = 9.5,
            },
            Downing = new DowningOptions { StableAfter = TimeSpan.FromSeconds(4) },
        };

        var config = AkkaConfig.Build(options, [AkkaConfig.ManagerRole]);

        Assert.Equal("127.0.0.5", config.GetString("akka.remote.dot-netty.tcp.hostname"));
        Assert.Equal(4999, config.GetInt("akka.remote.dot-netty.tcp.port"));
        Assert.Equal(TimeSpan.FromMilliseconds(250), config.GetTimeSpan("akka.cluster.failure-detector.heartbeat-interval"));
        Assert.Equal(TimeSpan.FromMilliseconds(1500), config.GetTimeSpan("akka.cluster.failure-detector.acceptable-heartbeat-pause"));
        Assert.Equal(9.5, config.GetDouble("akka.cluster.failure-detector.threshold"));
        Assert.Equal("keep-majority", config.GetString("akka.cluster.split-brain-resolver.active-strategy"));
        Assert.Equal(TimeSpan.FromSeconds(4), config.GetTimeSpan("akka.cluster.split-brain-resolver.stable-after"));
        Assert.Equal([AkkaConfig.ManagerRole], config.GetStringList("akka.cluster.roles"));
        Assert.Equal("quintet-wire", config.GetString("akka.actor.serialization-bindings.\"Google.Protobuf.IMessage, Google.Protobuf\""));
    }

    [Theory]
    [InlineData(2000, 3, 10)]
    [InlineData(2000, 30, 37)]
    [InlineData(500, 0, 5.5)]
    [InlineData(100, 0, 5.1)]
    public void A_failed_address_stays_closed_until_the_dead_manager_would_be_removed(int pauseMs, int stableAfterSeconds, double gateSeconds)
    {
        var options = new ClusterOptions
        {
            FailureDetector = new FailureDetectorOptions { AcceptableHeartbeatPause = TimeSpan.FromMilliseconds(pauseMs) },
            Downing = new DowningOptions { StableAfter = TimeSpan.FromSeconds(stableAfterSeconds) },
        };

        var config = AkkaConfig.Build(options, [AkkaConfig.ManagerRole]);

        Assert.Equal(TimeSpan.FromSeconds(gateSeconds), config.GetTimeSpan("akka.remote.retry-gate-closed-for"));
    }

    [Theory]
    [InlineData(3, 2)]
    [InlineData(4, 3)]
    [InlineData(5, 3)]
    public void A_planned_cluster_size_gives_a_fixed_quorum_of_its_majority(int managers, int quorum)
    {
        var options = new ClusterOptions { Downing = new DowningOptions { Managers = managers } };

        var config = AkkaConfig.Build(options, [AkkaConfig.ManagerRole]);

        Assert.Equal("static-quorum", config.GetString("akka.cluster.split-brain-resolver.active-strategy"));
        Assert.Equal(quorum, config.GetInt("akka.cluster.split-brain-resolver.static-quorum.quorum-size"));
    }

    [Fact]
    public void A_host_with_quotes_cannot_inject_configuration()
    {
        var options = new ClusterOptions { Host = "x\" \n akka.loglevel = DEBUG \n y = \"" };

        var config = AkkaConfig.Build(options, ["r"]);

        Assert.Equal(options.Host, config.GetString("akka.remote.dot-netty.tcp.hostname"));
        Assert.Equal("INFO", config.GetString("akka.loglevel"));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void The_cluster_port_uses_TLS_exactly_when_security_is_on(bool tls)
    {
        var config = AkkaConfig.Build(new ClusterOptions(), [AkkaConfig.ManagerRole], tls);

        Assert.Equal(tls, config.GetBoolean("akka.remote.dot-netty.tcp.enable-ssl"));
    }
}
