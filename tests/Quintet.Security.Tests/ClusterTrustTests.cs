using System.Security.Cryptography.X509Certificates;

namespace Quintet.Security.Tests;

public sealed class ClusterTrustTests : IDisposable
{
    private readonly CertificateAuthority _authority = CertificateAuthority.Create();

    public void Dispose() => _authority.Dispose();

    [Fact]
    public void A_manager_certificate_of_the_cluster_CA_is_accepted_as_a_manager()
    {
        using var manager = _authority.IssueManager("web1", ["127.0.0.1", "web1.example"]);
        var check = Trust(_authority).Check(manager, CertificateKind.Manager);

        Assert.True(check.IsAccepted, check.Reason);
        Assert.Equal(new CertificateIdentity("web1", [], CertificateKind.Manager).Name, check.Identity!.Name);
        Assert.Equal(CertificateKind.Manager, check.Identity.Kind);
        Assert.Empty(check.Identity.Roles);
    }

    [Fact]
    public void A_client_certificate_in_place_of_a_manager_certificate_is_refused()
    {
        using var client = _authority.IssueClient("alice", ["admin"]);
        var check = Trust(_authority).Check(client, CertificateKind.Manager);

        Assert.False(check.IsAccepted);
        Assert.Contains("client certificate, not a manager's", check.Reason);
    }

    [Fact]
    public void A_certificate_of_another_CA_is_refused_with_its_issuer_named()
    {
        using var other = CertificateAuthority.Create("Someone else's CA");
        using var manager = other.IssueManager("web1", ["127.0.0.1"]);
        var check = Trust(_authority).Check(manager, CertificateKind.Manager);

        Assert.False(check.IsAccepted);
        Assert.Contains("not from a CA this cluster trusts", check.Reason);
        Assert.Contains("Someone else's CA", check.Reason);
    }

    [Fact]
    public void An_expired_certificate_is_refused_with_its_expiry()
    {
        using var older = CertificateAuthority.Create(notBefore: DateTimeOffset.UtcNow.AddDays(-10));
        using var manager = older.IssueManager("web1", ["127.0.0.1"], TimeSpan.FromDays(1), DateTimeOffset.UtcNow.AddDays(-3));
        var check = Trust(older).Check(manager, CertificateKind.Manager);

        Assert.False(check.IsAccepted);
        Assert.Contains("expired at", check.Reason);
    }

    [Fact]
    public void No_certificate_is_refused()
    {
        var check = Trust(_authority).Check(null, CertificateKind.Client);

        Assert.False(check.IsAccepted);
        Assert.Equal("the peer presented no certificate", check.Reason);
    }

    [Fact]
    public void During_a_rotation_certificates_of_the_old_and_the_new_CA_are_both_accepted()
    {
        using var next = CertificateAuthority.Create("Quintet cluster CA 2");
        using var old = _authority.IssueManager("web1", ["127.0.0.1"]);
        using var renewed = next.IssueManager("web1", ["127.0.0.1"]);
        var both = new ClusterTrust([CertificateOnly(_authority.Certificate), CertificateOnly(next.Certificate)]);

        Assert.True(both.Check(old, CertificateKind.Manager).IsAccepted);
        Assert.True(both.Check(renewed, CertificateKind.Manager).IsAccepted);
        Assert.False(Trust(next).Check(old, CertificateKind.Manager).IsAccepted);
    }

    [Fact]
    public void A_client_certificate_carries_its_user_and_roles()
    {
        using var client = _authority.IssueClient("alice", ["operator", "reader"]);
        var check = Trust(_authority).Check(client, CertificateKind.Client);

        Assert.True(check.IsAccepted, check.Reason);
        Assert.Equal("alice", check.Identity!.Name);
        Assert.Equal(CertificateKind.Client, check.Identity.Kind);
        Assert.Equal(["operator", "reader"], check.Identity.Roles.Order(StringComparer.Ordinal));
    }

    [Fact]
    public void A_client_cannot_be_given_the_managers_mark_as_a_role()
    {
        var refused = Assert.Throws<ArgumentException>(() => _authority.IssueClient("mallory", [CertificateAuthority.ManagerUnit]));
        Assert.Contains("marks manager certificates", refused.Message);
    }

    private static ClusterTrust Trust(CertificateAuthority authority) => new([CertificateOnly(authority.Certificate)]);

    // A peer only ever has the CA's certificate, never its key.
    private static X509Certificate2 CertificateOnly(X509Certificate2 certificate) => X509CertificateLoader.LoadCertificate(certificate.RawData);
}
