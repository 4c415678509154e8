using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Security;

namespace Quintet.AdminClient;

/// <summary>Channels to a manager's gRPC port with an administrator's credentials, and what their failures mean.</summary>
public static class AdminChannels
{
    /// <summary>
    /// A channel to <paramref name="endpoint"/> presenting <paramref name="credentials"/>. Credentials are sent over
    /// https only: check with <see cref="CheckEndpoint"/> first.
    /// </summary>
    /// <param name="endpoint">The manager's gRPC endpoint.</param>
    /// <param name="credentials">What to present, and the CAs the manager's certificate must come from.</param>
    /// <param name="settings">Network behaviour; null for the defaults.</param>
    /// <param name="serverRefused">Told why the manager's certificate was refused, when it is.</param>
    public static GrpcChannel Open(Uri endpoint, AdminCredentials credentials, AdminChannelSettings? settings = null, Action<string>? serverRefused = null)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        ArgumentNullException.ThrowIfNull(credentials);
        settings ??= new AdminChannelSettings();
        var options = new GrpcChannelOptions { MaxSendMessageSize = settings.MaxMessageBytes, MaxReceiveMessageSize = settings.MaxMessageBytes };
        var handler = new SocketsHttpHandler { EnableMultipleHttp2Connections = true };
        if (settings.ConnectTimeout is { } connect)
        {
            handler.ConnectTimeout = connect;
        }

        if (settings.KeepAliveTime is { } keepAlive)
        {
            handler.KeepAlivePingDelay = keepAlive;
            handler.KeepAlivePingTimeout = settings.KeepAliveTimeout;
            handler.KeepAlivePingPolicy = HttpKeepAlivePingPolicy.WithActiveRequests;
        }

        options.HttpHandler = handler;
        options.DisposeHttpClient = true;
        if (credentials.IsEmpty)
        {
            return GrpcChannel.ForAddress(endpoint, options);
        }

        // Without the cluster's CAs the platform checks the server, as for a TLS-terminating proxy with a public certificate.
        var certificate = credentials.Certificate;
        handler.SslOptions = credentials.Trust is null
            ? new SslClientAuthenticationOptions { ClientCertificates = certificate is null ? null : [certificate] }
            : ClusterTls.ClientOptions(credentials.Trust, certificate, serverRefused);
        if (credentials.BearerToken is { } token)
        {
            var header = "Bearer " + token.Trim();
            options.Credentials = ChannelCredentials.Create(new SslCredentials(), CallCredentials.FromInterceptor((_, metadata) =>
            {
                metadata.Add("authorization", header);
                return Task.CompletedTask;
            }));
        }

        return GrpcChannel.ForAddress(endpoint, options);
    }

    /// <summary>Null when <paramref name="credentials"/> may be sent to <paramref name="endpoint"/>, else why not.</summary>
    public static string? CheckEndpoint(Uri endpoint, AdminCredentials credentials)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        ArgumentNullException.ThrowIfNull(credentials);
        if (endpoint.Scheme != Uri.UriSchemeHttp && endpoint.Scheme != Uri.UriSchemeHttps)
        {
            return $"'{endpoint}' is not an http:// or https:// address (for example https://10.0.0.1:5053).";
        }

        return endpoint.Scheme == Uri.UriSchemeHttp && !credentials.IsEmpty
            ? $"'{endpoint}' is http, but the cluster is secured (a CA, a certificate or a token is given): use its https:// endpoint (credentials are never sent in the clear)."
            : null;
    }

    /// <summary>Whether <paramref name="exception"/> is a TLS handshake that failed (either side refused).</summary>
    public static bool IsTlsFailure(RpcException exception)
    {
        ArgumentNullException.ThrowIfNull(exception);
        for (Exception? e = exception.Status.DebugException; e is not null; e = e.InnerException)
        {
            if (e is AuthenticationException)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Whether <paramref name="exception"/> says the manager could not be reached at all (refused, reset or timed-out
    /// connection, no route): the request never reached it, so sending it to another manager cannot run it twice.
    /// </summary>
    public static bool IsConnectionFailure(RpcException exception)
    {
        ArgumentNullException.ThrowIfNull(exception);
        if (exception.StatusCode != StatusCode.Unavailable || IsTlsFailure(exception))
        {
            return false;
        }

        for (Exception? e = exception.Status.DebugException; e is not null; e = e.InnerException)
        {
            if (e is SocketException or HttpRequestException { HttpRequestError: HttpRequestError.ConnectionError or HttpRequestError.NameResolutionError })
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>The innermost cause of a failed call, in its own words.</summary>
    public static string InnermostMessage(RpcException exception)
    {
        ArgumentNullException.ThrowIfNull(exception);
        Exception? e = exception.Status.DebugException;
        while (e?.InnerException is not null)
        {
            e = e.InnerException;
        }

        return e?.Message ?? exception.Status.Detail;
    }
}
