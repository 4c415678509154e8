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
}
