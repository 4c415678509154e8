using Quintet.Core.Cluster;

namespace Quintet.Core.Tests;

public class ClusterAddressTests
{
    [Theory]
    [InlineData("127.0.0.1:4053", "127.0.0.1", 4053)]
    [InlineData("manager-a.example.com:5000", "manager-a.example.com", 5000)]
    [InlineData("akka.tcp://quintet@10.1.2.3:4053", "10.1.2.3", 4053)]
    [InlineData(" 127.0.0.2:1 ", "127.0.0.2", 1)]
    [InlineData("[::1]:4053", "::1", 4053)]
    public void Seed_in_either_form_parses_to_the_cluster_address(string text, string host, int port)
    {
        Assert.True(ClusterAddress.TryParseSeed(text, "quintet", out var address, out var error), error);
        Assert.Equal("quintet", address!.System);
        Assert.Equal(host, address.Host);
        Assert.Equal(port, address.Port);
        Assert.Equal("akka.tcp", address.Protocol);
    }

    [Theory]
    [InlineData("", "is empty")]
    [InlineData("127.0.0.1", "is not host:port")]
    [InlineData("127.0.0.1:0", "outside 1-65535")]
    [InlineData("127.0.0.1:70000", "outside 1-65535")]
    [InlineData("bad:host:x", "is not host:port")]
    [InlineData("http://127.0.0.1:4053", "unknown protocol")]
    [InlineData("akka.tcp://127.0.0.1:4053", "has no '@'")]
    [InlineData("akka.tcp://other@127.0.0.1:4053", "names cluster 'other'")]
    [InlineData("bad_host!:4053", "invalid host")]
    public void Malformed_seed_is_refused_with_the_reason(string text, string reason)
    {
        Assert.False(ClusterAddress.TryParseSeed(text, "quintet", out var address, out var error));
        Assert.Null(address);
        Assert.Contains(reason, error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("127.0.0.1:4053")]
    [InlineData("akka.ssl.tcp://quintet@127.0.0.1:4053")]
    public void With_TLS_a_seed_is_an_akka_ssl_tcp_address(string text)
    {
        Assert.True(ClusterAddress.TryParseSeed(text, "quintet", secure: true, out var address, out var error), error);
        Assert.Equal("akka.ssl.tcp://quintet@127.0.0.1:4053", address!.ToString());
    }

    [Theory]
    [InlineData(true, "akka.tcp://quintet@127.0.0.1:4053", "is a plaintext address, but this manager's cluster port uses TLS")]
    [InlineData(false, "akka.ssl.tcp://quintet@127.0.0.1:4053", "is a TLS address, but this manager's security is off")]
    public void A_full_seed_address_of_the_other_protocol_is_refused_with_the_reason(bool secure, string text, string reason)
    {
        Assert.False(ClusterAddress.TryParseSeed(text, "quintet", secure, out var address, out var error));
        Assert.Null(address);
        Assert.Contains(reason, error, StringComparison.Ordinal);
    }
}
