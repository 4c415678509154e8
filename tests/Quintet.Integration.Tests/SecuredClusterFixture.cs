using System.Security.Cryptography;
using Google.Protobuf;
using Microsoft.IdentityModel.JsonWebTokens;
using Microsoft.IdentityModel.Tokens;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// One secured cluster of two managers shared by the tests of a class: certificates of a test CA, tokens signed with a
/// secret the managers know, and the probe package deployed (by the testing host's admin certificate).
/// </summary>
public sealed class SecuredClusterFixture : IAsyncLifetime
{
    private readonly byte[] _secret = RandomNumberGenerator.GetBytes(32);

    public LocalCertificates Certificates { get; } = LocalCertificates.Create();

    public LocalClusterOptions Options { get; } = ClusterTest.Options(2);

    public LocalCluster Cluster { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        Options.Certificates = Certificates;
        Options.Settings["Quintet:Security:Jwt:SigningKeys:0"] = Convert.ToBase64String(_secret);
        try
        {
            Cluster = await LocalCluster.StartAsync(Options);
            await new ComponentAdmin.ComponentAdminClient(Cluster.Managers[0].Channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(ProbeComponent).Assembly)) },
                deadline: DateTime.UtcNow.AddSeconds(60));
            await ClusterTest.WaitForPackagesAsync(Cluster.Managers, "CoordinationProbe");
        }
        catch (Exception e)
        {
            throw new InvalidOperationException($"The secured cluster did not start: {e.Message}\n{ClusterTest.DescribeLogs(Options.LogDirectory!)}", e);
        }
    }

    /// <summary>A token for <paramref name="user"/> with <paramref name="roles"/>, signed with the managers' secret unless <paramref name="key"/> says otherwise.</summary>
    public string Token(string user, string[] roles, TimeSpan? lifetime = null, byte[]? key = null) => CreateToken(key ?? _secret, user, roles, lifetime);

    /// <summary>A token for <paramref name="user"/> with <paramref name="roles"/> signed (HMAC-SHA256) with <paramref name="key"/>, valid for <paramref name="lifetime"/> (10 minutes; negative: expired that long ago).</summary>
    public static string CreateToken(byte[] key, string user, string[] roles, TimeSpan? lifetime = null)
    {
        var now = DateTime.UtcNow;
        var expires = now + (lifetime ?? TimeSpan.FromMinutes(10));
        var claims = new Dictionary<string, object> { ["sub"] = user, ["roles"] = roles };
        return new JsonWebTokenHandler { SetDefaultTimesOnTokenCreation = false }.CreateToken(new SecurityTokenDescriptor
        {
            Issuer = "quintet",
            Audience = "quintet",
            Claims = claims,
            IssuedAt = expires < now ? expires.AddMinutes(-10) : now,
            NotBefore = expires < now ? expires.AddMinutes(-10) : now.AddMinutes(-1),
            Expires = expires,
            SigningCredentials = new SigningCredentials(new SymmetricSecurityKey(key), SecurityAlgorithms.HmacSha256),
        });
    }

    public async Task DisposeAsync()
    {
        if (Cluster is not null)
        {
            await Cluster.DisposeAsync();
        }

        Certificates.Dispose();
    }
}
