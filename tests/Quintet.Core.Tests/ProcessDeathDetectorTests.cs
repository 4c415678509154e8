using System.Net;
using Quintet.Core.Cluster;

namespace Quintet.Core.Tests;

public class ProcessDeathDetectorTests
{
    [Fact]
    public void A_refusal_is_evidence_only_from_where_the_setting_trusts_it()
    {
        var otherHost = IPAddress.Parse("203.0.113.7");

        Assert.True(ProcessDeathDetector.Trusts(ProcessDeathEvidence.SameHost, IPAddress.Loopback));
        Assert.True(ProcessDeathDetector.Trusts(ProcessDeathEvidence.SameHost, IPAddress.Parse("127.0.0.2")));
        Assert.True(ProcessDeathDetector.Trusts(ProcessDeathEvidence.SameHost, IPAddress.IPv6Loopback));
        Assert.False(ProcessDeathDetector.Trusts(ProcessDeathEvidence.SameHost, otherHost));
        Assert.True(ProcessDeathDetector.Trusts(ProcessDeathEvidence.AnyHost, otherHost));
        Assert.False(ProcessDeathDetector.Trusts(ProcessDeathEvidence.Off, IPAddress.Loopback));
    }

    [Fact]
    public void The_setting_defaults_to_this_host_and_an_unknown_value_names_it()
    {
        Assert.Equal(ProcessDeathEvidence.SameHost, new FailureDetectorOptions().ProcessDeathEvidence);
        var failures = new ClusterOptionsValidator().Validate(
            null, new ClusterOptions { FailureDetector = new FailureDetectorOptions { ProcessDeathEvidence = (ProcessDeathEvidence)9 } }).Failures!;

        Assert.StartsWith("Quintet:Cluster:FailureDetector:ProcessDeathEvidence:", Assert.Single(failures), StringComparison.Ordinal);
    }
}
