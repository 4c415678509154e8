namespace Quintet.Client.Tests;

/// <summary>Options out of range are refused when connecting, the message naming the property to change.</summary>
public class QuintetClientOptionsTests
{
    [Fact]
    public void Options_out_of_range_are_refused_naming_the_property()
    {
        var none = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions()));
        Assert.Contains("QuintetClientOptions.Endpoints", none.Message, StringComparison.Ordinal);
        var relative = Assert.Throws<ArgumentException>(() => QuintetClient.Connect("127.0.0.1:5053", "http://127.0.0.1:5054"));
        Assert.Contains("'127.0.0.1:5053'", relative.Message, StringComparison.Ordinal);
        var budget = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], FailoverBudget = TimeSpan.FromSeconds(-1) }));
        Assert.Contains("QuintetClientOptions.FailoverBudget", budget.Message, StringComparison.Ordinal);

        using var client = QuintetClient.Connect("http://127.0.0.1:5053/", "http://127.0.0.1:5053", "https://localhost:5055");
        Assert.Equal(["http://127.0.0.1:5053", "https://localhost:5055"], client.Endpoints);
    }

    [Theory]
    [InlineData("ftp://127.0.0.1:5053", "'ftp://127.0.0.1:5053' is not an absolute http or https address")]
    [InlineData("http://127.0.0.1:5053/?manager=1", "'http://127.0.0.1:5053/?manager=1' is not an absolute http or https address")]
    [InlineData("  ", "'  ' is not an absolute http or https address")]
    public void An_endpoint_that_is_not_an_http_address_is_refused(string endpoint, string expected)
    {
        var error = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053", endpoint] }));
        Assert.Contains("QuintetClientOptions.Endpoints", error.Message, StringComparison.Ordinal);
        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_deadline_that_is_not_positive_keepalive_times_under_a_second_and_a_negative_route_capacity_are_refused()
    {
        var zero = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], AttemptDeadline = TimeSpan.Zero }));
        Assert.Contains("QuintetClientOptions.AttemptDeadline is 00:00:00", zero.Message, StringComparison.Ordinal);
        var routes = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], RouteCapacity = -1 }));
        Assert.Contains("QuintetClientOptions.RouteCapacity is -1", routes.Message, StringComparison.Ordinal);

        // HTTP/2 keepalive pings cannot be timed finer than a second.
        var keepAlive = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], KeepAliveTime = TimeSpan.FromMilliseconds(500) }));
        Assert.Contains("QuintetClientOptions.KeepAliveTime is 00:00:00.5000000; it must be 1 s or more", keepAlive.Message, StringComparison.Ordinal);
        var keepAliveTimeout = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], KeepAliveTimeout = TimeSpan.Zero }));
        Assert.Contains("QuintetClientOptions.KeepAliveTimeout is 00:00:00; it must be 1 s or more", keepAliveTimeout.Message, StringComparison.Ordinal);

        // The limits themselves are allowed: no deadline, no keepalive pings, no retries, no routing.
        using var client = QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["https://localhost:5055/"], AttemptDeadline = null, KeepAliveTime = null, FailoverBudget = TimeSpan.Zero, RouteCapacity = 0 });
        Assert.Equal(["https://localhost:5055"], client.Endpoints);
        Assert.Equal(new QuintetClientStatistics(0, 0, 0, 0, 0), client.Statistics);
    }

    [Fact]
    public void Security_options_that_do_not_go_together_are_refused_naming_what_to_change()
    {
        var caOverHttp = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], CertificateAuthorityFile = "ca.crt" }));
        Assert.Contains("'http://127.0.0.1:5053' is http", caOverHttp.Message, StringComparison.Ordinal);
        var tokenOverHttp = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["http://127.0.0.1:5053"], BearerToken = "t" }));
        Assert.Contains("never sent in the clear", tokenOverHttp.Message, StringComparison.Ordinal);
        var halfPair = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["https://127.0.0.1:5053"], CertificateFile = "client.crt" }));
        Assert.Contains("QuintetClientOptions.CertificateFile and KeyFile go together", halfPair.Message, StringComparison.Ordinal);
        var missing = Assert.Throws<ArgumentException>(() => QuintetClient.Connect(new QuintetClientOptions { Endpoints = ["https://127.0.0.1:5053"], CertificateAuthorityFile = Path.Combine(Path.GetTempPath(), "no-such-ca.crt") }));
        Assert.Contains("no-such-ca.crt", missing.Message, StringComparison.Ordinal);
    }
}
