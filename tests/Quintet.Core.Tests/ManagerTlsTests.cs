using Microsoft.Extensions.Logging;
using Quintet.Core.Cluster;
using Quintet.Security;
using Quintet.TestingHost;

namespace Quintet.Core.Tests;

/// <summary>The check the channels between managers make of each other, and how its refusals are logged.</summary>
public sealed class ManagerTlsTests : IDisposable
{
    // Valid since days, so that it can issue a certificate that has expired.
    private readonly LocalCertificates _certificates = LocalCertificates.Create(authority: CertificateAuthority.Create("Quintet test CA", notBefore: DateTimeOffset.UtcNow.AddDays(-10)));
    private readonly ClusterSecurity _security;
    private readonly ManualClock _clock = new();
    private readonly RecordingLogger _log = new();
    private readonly ManagerTls _tls;

    public ManagerTlsTests()
    {
        _security = ClusterSecurity.Load(new SecurityOptions { CertificatesDirectory = _certificates.Directory });
        _tls = new ManagerTls(_security, _log, _clock);
    }

    public void Dispose()
    {
        _security.Dispose();
        _certificates.Dispose();
    }

    [Fact]
    public void A_manager_certificate_of_the_cluster_is_admitted_on_either_channel_without_a_log()
    {
        using var peer = _certificates.Authority.IssueManager("manager-2", ["10.9.9.9"]);

        Assert.True(_tls.Admit(peer, ManagerTls.ClusterPort, "127.0.0.1:40000"));
        Assert.True(_tls.AkkaValidator(peer, null, "akka.ssl.tcp://q@10.9.9.9:4053", System.Net.Security.SslPolicyErrors.RemoteCertificateChainErrors, null!));
        Assert.Empty(_log.Lines);
    }

    [Fact]
    public void Refusals_name_the_peer_the_channel_and_the_reason_and_a_retrying_peer_is_logged_once_per_interval()
    {
        using var client = _certificates.Authority.IssueClient("mallory", ["admin"]);

        // A peer that retries from new ports in a loop.
        for (var port = 40000; port < 40050; port++)
        {
            Assert.False(_tls.Admit(client, ManagerTls.GroupPort, $"127.0.0.1:{port}"));
        }

        Assert.False(_tls.Admit(null, ManagerTls.GroupPort, "127.0.0.1:41000"));
        Assert.False(_tls.Admit(client, ManagerTls.GroupPort, "127.0.0.2:41001"));
        Assert.Collection(
            _log.Lines,
            l => Assert.Matches(@"^Warning: TLS: refused the peer 127\.0\.0\.1:40000 on the group port: its certificate '.*CN=mallory.*' is a client certificate, not a manager's", l),
            l => Assert.Equal("Warning: TLS: refused the peer 127.0.0.1:41000 on the group port: the peer presented no certificate", l),
            l => Assert.Matches(@"^Warning: TLS: refused the peer 127\.0\.0\.2:41001 on the group port: .* is a client certificate", l));

        _clock.Advance(ManagerTls.RefusalLogInterval);
        Assert.False(_tls.Admit(client, ManagerTls.GroupPort, "127.0.0.1:42000"));
        Assert.EndsWith("(refused 49 more times since this was last logged)", _log.Lines[^1], StringComparison.Ordinal);
    }

    [Fact]
    public void Certificates_of_another_CA_and_expired_ones_are_refused_with_their_reason()
    {
        using var other = CertificateAuthority.Create("Another CA");
        using var foreign = other.IssueManager("manager", ["127.0.0.1"]);
        using var expired = _certificates.Authority.IssueManager("manager", ["127.0.0.1"], validity: TimeSpan.FromDays(1), notBefore: DateTimeOffset.UtcNow.AddDays(-2));

        Assert.False(_tls.AkkaValidator(foreign, null, "[::ffff:127.0.0.1]:40001", System.Net.Security.SslPolicyErrors.None, null!));
        Assert.False(_tls.AkkaValidator(expired, null, "akka.ssl.tcp://q@127.0.0.1:4053", System.Net.Security.SslPolicyErrors.None, null!));

        Assert.Collection(
            _log.Lines,
            l => Assert.Matches(@"refused the peer \[::ffff:127\.0\.0\.1\]:40001 on the cluster port: its certificate '.*' \(issued by '.*CN=Another CA.*'\) is not from a CA this cluster trusts", l),
            l => Assert.Matches(@"refused the peer akka\.ssl\.tcp://q@127\.0\.0\.1:4053 on the cluster port: its certificate '.*' expired at", l));
    }

    [Fact]
    public void Security_off_has_no_TLS_to_offer() =>
        Assert.Throws<ArgumentException>(() => new ManagerTls(ClusterSecurity.Open, _log));

    private sealed class ManualClock : TimeProvider
    {
        private long _ticks = 1_000_000;

        public override long TimestampFrequency => TimeSpan.TicksPerSecond;

        public override long GetTimestamp() => _ticks;

        public void Advance(TimeSpan by) => _ticks += by.Ticks;
    }

    private sealed class RecordingLogger : ILogger
    {
        private readonly List<string> _lines = [];

        public IReadOnlyList<string> Lines
        {
            get
            {
                lock (_lines)
                {
                    return [.. _lines];
                }
            }
        }

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            lock (_lines)
            {
                _lines.Add($"{logLevel}: {formatter(state, exception)}");
            }
        }
    }
}
