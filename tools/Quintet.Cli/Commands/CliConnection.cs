using System.CommandLine;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.AdminClient;
using Quintet.Cli.Configuration;
using Quintet.Security;

namespace Quintet.Cli.Commands;

/// <summary>
/// How the CLI connects to a secured cluster: the global options <c>--ca</c>, <c>--cert</c>, <c>--key</c> and
/// <c>--token</c> (or the environment variables <c>QUINTET_CA</c>, <c>QUINTET_CERT</c>, <c>QUINTET_KEY</c>,
/// <c>QUINTET_TOKEN</c>), and the channels made from them.
/// </summary>
internal sealed class CliConnection
{
    private string? _refusedServer;

    /// <summary>The PEM file of the cluster's CAs; null for a cluster with security off.</summary>
    public string? CaFile { get; init; }

    /// <summary>The client certificate's PEM file.</summary>
    public string? CertFile { get; init; }

    /// <summary>The client certificate's key file.</summary>
    public string? KeyFile { get; init; }

    /// <summary>A bearer token sent with every call.</summary>
    public string? Token { get; init; }

    /// <summary>Why the last server certificate was refused, if one was.</summary>
    public string? RefusedServer => _refusedServer;

    /// <summary>The global options, each falling back on its environment variable.</summary>
    public static (Option<string?> Ca, Option<string?> Cert, Option<string?> Key, Option<string?> Token) CreateOptions(CliEnvironment environment) =>
        (Create(environment, "--ca", CliEnvironment.Ca, "The PEM file of the CAs the cluster trusts (ca.crt): connect over TLS, to managers with a certificate from them."),
         Create(environment, "--cert", CliEnvironment.Cert, "The client certificate (PEM) to present to a secured cluster; with --key."),
         Create(environment, "--key", CliEnvironment.Key, "The private key (PEM) of --cert."),
         Create(environment, "--token", CliEnvironment.Token, "A bearer token (JWT) to present to a secured cluster, in place of a client certificate."));

    /// <summary>Checks the combination of the options with <paramref name="endpoint"/>; null when it is fine, else what is wrong.</summary>
    public string? Check(Uri endpoint)
    {
        var https = endpoint.Scheme == Uri.UriSchemeHttps;
        if (!https && (CaFile is not null || CertFile is not null || Token is not null))
        {
            return $"'{endpoint}' is http, but --ca, --cert or --token says the cluster is secured: use its https:// endpoint (credentials are never sent in the clear).";
        }

        if ((CertFile is null) != (KeyFile is null))
        {
            return "--cert and --key go together: give both (or QUINTET_CERT and QUINTET_KEY), or neither.";
        }

        return null;
    }

    /// <summary>A channel to <paramref name="endpoint"/> with these settings; the options were checked.</summary>
    /// <exception cref="CertificateException">A certificate file cannot be read.</exception>
    public GrpcChannel Open(Uri endpoint) => AdminChannels.Open(endpoint, Credentials(), new AdminChannelSettings(), reason => _refusedServer = reason);

    /// <summary>The credentials these options name, read from their files.</summary>
    /// <exception cref="CertificateException">A certificate file cannot be read.</exception>
    public AdminCredentials Credentials() => new()
    {
        Trust = CaFile is null ? null : ClusterTrust.Load(CaFile),
        Certificate = CertFile is null ? null : CertificateFiles.LoadWithKey(CertFile, KeyFile!),
        BearerToken = Token,
    };

    /// <summary>Whether <paramref name="exception"/> is a TLS handshake that failed (either side refused).</summary>
    public static bool IsTlsFailure(RpcException exception) => AdminChannels.IsTlsFailure(exception);

    /// <summary>The message for a failed TLS handshake with the manager at <paramref name="endpoint"/>.</summary>
    public string TlsFailure(string endpoint, RpcException exception) => RefusedServer is { } reason
        ? $"the TLS handshake with {endpoint} failed: the manager was refused, {reason}. Is --ca the cluster's CA certificate?"
        : $"the TLS handshake with {endpoint} failed ({AdminChannels.InnermostMessage(exception)}). Is --ca the cluster's CA certificate, and --cert one of its client certificates?";

    private static Option<string?> Create(CliEnvironment environment, string name, string variable, string description) => new(name)
    {
        Description = $"{description} Default: ${variable}, else the saved context's.",
        Recursive = true,
        DefaultValueFactory = _ => environment.Get(variable),
    };
}
