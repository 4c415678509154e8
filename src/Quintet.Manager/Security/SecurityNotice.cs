using Quintet.Security;

namespace Quintet.Manager.Security;

/// <summary>
/// Says at start how this manager is secured: an operator who left security off on loopback, or allowed it off
/// elsewhere, sees it in the first lines of the log.
/// </summary>
internal sealed partial class SecurityNotice(ClusterSecurity security, ILogger<SecurityNotice> logger) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (security.Enabled)
        {
            var identity = CertificateIdentity.Of(security.Certificate!);
            LogSecured(logger, identity.Name, security.Certificate!.NotAfter.ToUniversalTime(), security.Trust!.Authorities.Count);
        }
        else if (security.Options.AllowInsecure)
        {
            LogInsecureAllowed(logger);
        }
        else
        {
            LogOpenOnLoopback(logger);
        }

        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    [LoggerMessage(Level = LogLevel.Information, Message = "Security on: this manager is '{Name}' (certificate valid until {NotAfter:u}); {Authorities} trusted CA(s); every channel uses TLS and authenticates its peer.")]
    private static partial void LogSecured(ILogger logger, string name, DateTime notAfter, int authorities);

    [LoggerMessage(Level = LogLevel.Warning, Message = "SECURITY IS OFF, on an address other than loopback (Quintet:Security:AllowInsecure): anyone who reaches this manager can deploy and run code. Use this only on a network no one else can reach; docs/security.md sets certificates up.")]
    private static partial void LogInsecureAllowed(ILogger logger);

    [LoggerMessage(Level = LogLevel.Warning, Message = "SECURITY IS OFF: this manager listens on loopback only, and any program on this machine can deploy and run code through it. Set Quintet:Security:CertificatesDirectory to secure it (docs/security.md).")]
    private static partial void LogOpenOnLoopback(ILogger logger);
}
