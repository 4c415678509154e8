using System.Security.Cryptography.X509Certificates;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Security;

namespace Quintet.Client;

/// <summary>
/// How a client proves itself to a secured cluster and checks that it talks to one, read once from
/// <see cref="QuintetClientOptions"/>: the trusted CAs, the client certificate, the bearer token.
/// </summary>
internal sealed class ClientSecurity : IDisposable
{
    private readonly bool _ownsCertificate;

    private ClientSecurity(ClusterTrust? trust, X509Certificate2? certificate, bool ownsCertificate, string? bearerToken)
    {
        Trust = trust;
        Certificate = certificate;
        _ownsCertificate = ownsCertificate;
        BearerToken = bearerToken;
    }

    /// <summary>No TLS, no credentials: a cluster with security off.</summary>
    public static ClientSecurity None { get; } = new(null, null, false, null);

    public ClusterTrust? Trust { get; }

    public X509Certificate2? Certificate { get; }

    public string? BearerToken { get; }

    /// <summary>Reads the files the options name; the options were validated.</summary>
    /// <exception cref="ArgumentException">A file is missing or unreadable; the message names the option.</exception>
    public static ClientSecurity Load(QuintetClientOptions options)
    {
        if (options.CertificateAuthorityFile is null && options.CertificateFile is null && options.Certificate is null && options.BearerToken is null)
        {
            return None;
        }

        try
        {
            var trust = options.CertificateAuthorityFile is null ? null : ClusterTrust.Load(options.CertificateAuthorityFile);
            var loaded = options.CertificateFile is not null;
            var certificate = loaded ? CertificateFiles.LoadWithKey(options.CertificateFile!, options.KeyFile!) : options.Certificate;
            return new ClientSecurity(trust, certificate, loaded, string.IsNullOrWhiteSpace(options.BearerToken) ? null : options.BearerToken.Trim());
        }
        catch (CertificateException e)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}: {e.Message}", nameof(options), e);
        }
    }

    /// <summary>
    /// Sets up <paramref name="channel"/> for a manager: with a CA, TLS that accepts only a manager certificate of the
    /// cluster (else the platform's check); the client certificate presented and the token sent with every call.
    /// </summary>
    public void Apply(GrpcChannelOptions channel, SocketsHttpHandler handler)
    {
        if (Trust is not null)
        {
            handler.SslOptions = ClusterTls.ClientOptions(Trust, Certificate);
        }
        else if (Certificate is not null)
        {
            handler.SslOptions = new System.Net.Security.SslClientAuthenticationOptions { ClientCertificates = [Certificate] };
        }

        if (BearerToken is { } token)
        {
            var header = "Bearer " + token;
            channel.Credentials = ChannelCredentials.Create(new SslCredentials(), CallCredentials.FromInterceptor((_, metadata) =>
            {
                metadata.Add("authorization", header);
                return Task.CompletedTask;
            }));
        }
    }

    public void Dispose()
    {
        if (_ownsCertificate)
        {
            Certificate?.Dispose();
        }
    }
}
