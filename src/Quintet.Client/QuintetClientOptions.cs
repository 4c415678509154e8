using System.Security.Cryptography.X509Certificates;

namespace Quintet.Client;

/// <summary>
/// How a <see cref="QuintetClient"/> reaches a cluster: the managers to start from, and how long a call keeps trying
/// other managers when the one it used is down. Passed to <see cref="QuintetClient.Connect(QuintetClientOptions)"/>.
/// </summary>
public sealed class QuintetClientOptions
{
    /// <summary>
    /// The gRPC endpoints of managers to send calls to, for example <c>http://127.0.0.1:5053</c>: absolute <c>http</c>
    /// or <c>https</c> addresses (<c>https</c> for a secured cluster, with <see cref="CertificateAuthorityFile"/>). Calls for a key the client has no route for go to one of them (the first, until it
    /// fails; then the next, round robin). One is enough to reach the whole cluster; more let the client carry on
    /// when that one is down.
    /// </summary>
    /// <value>Empty; at least one is required.</value>
    public IList<string> Endpoints { get; init; } = [];

    /// <summary>
    /// How long a call keeps retrying, on the next manager, after an attempt failed with <c>UNAVAILABLE</c> (a manager
    /// down or refusing connections, cut off from the majority, or asking the caller to retry while an instance moves).
    /// It should cover the cluster's time to notice a crashed manager and place its instances again elsewhere (a few
    /// seconds with the default settings; see docs/configuration.md). <see cref="TimeSpan.Zero"/> turns retries off.
    /// Retrying can run a call twice: see <see cref="QuintetClient"/>.
    /// </summary>
    /// <value>10 seconds.</value>
    public TimeSpan FailoverBudget { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// The deadline of each attempt of a call whose caller gave none (through <c>CallContext</c> / <c>CallOptions</c>);
    /// a caller's own deadline bounds every attempt and the retries together. An attempt that runs out of time fails
    /// with <c>DEADLINE_EXCEEDED</c> and is not retried (the component may have run it). Without one, an attempt on a
    /// manager that stopped answering still ends: see <see cref="KeepAliveTime"/>.
    /// </summary>
    /// <value>None (<see langword="null"/>): a deadline costs a timer on the client and on the manager for every call.</value>
    public TimeSpan? AttemptDeadline { get; init; }

    /// <summary>
    /// How long a connection to a manager may carry calls without a frame from it before the client sends it an HTTP/2
    /// ping (gRPC's keepalive); with <see cref="KeepAliveTimeout"/>, how an attempt on a manager that stopped answering
    /// ends (a paused process, a host gone, a network cut): the connection is closed and its calls fail with
    /// <c>UNAVAILABLE</c>, and fail over. Pings are sent only while calls are in flight, so a busy connection sends
    /// none. At least 1 s; <see langword="null"/> sends no pings.
    /// </summary>
    /// <value>2 seconds.</value>
    public TimeSpan? KeepAliveTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>How long the client waits for a manager to answer a keepalive ping (see <see cref="KeepAliveTime"/>) before it gives up on the connection. At least 1 s.</summary>
    /// <value>3 seconds: with the 2 s <see cref="KeepAliveTime"/>, a manager silent for 5 s, about as long as the cluster takes to remove a paused manager.</value>
    public TimeSpan KeepAliveTimeout { get; init; } = TimeSpan.FromSeconds(3);

    /// <summary>
    /// Whether the client follows the managers' view: it keeps a watch of the view
    /// (<c>quintet.cluster.v1.ClusterView/WatchManagers</c>) open on two managers, and when a view leaves out a manager
    /// it had seen (paused, cut off, crashed, stopped), it cancels at once the attempts in flight on that manager and
    /// retries them on another within <see cref="FailoverBudget"/> (under the same call identity: see
    /// <see cref="ExactlyOnce"/>), forgets the routes that name it and sends it nothing until a view lists it again,
    /// instead of waiting for the keepalive (<see cref="KeepAliveTime"/>) to give its connection up. The watches start
    /// with the client's first call. Off, the client learns of a manager's failure from its calls alone.
    /// </summary>
    /// <value><see langword="true"/>.</value>
    public bool FollowView { get; init; } = true;

    /// <summary>
    /// Whether each call carries the client's identity and its number, so that the manager owning the instance keeps a
    /// completion record of it and answers a retry from that record instead of running the call again (see
    /// <c>docs/client.md</c>, "Exactly once"). Off, calls carry no identity, managers keep no records for them, and a call
    /// retried on failover may run twice: for a client whose operations are idempotent anyway and that would rather not
    /// pay for the records (a few microseconds of CPU per call on the client and on the owner).
    /// </summary>
    /// <value><see langword="true"/>.</value>
    public bool ExactlyOnce { get; init; } = true;

    /// <summary>
    /// How many routes (contract and key to the endpoint of the manager that owns the instance) the client keeps;
    /// beyond that the oldest learned are dropped, and their next calls take one hop through a manager again. 0 turns
    /// routing off: every call goes to a configured endpoint, which forwards it to the owner.
    /// </summary>
    /// <value>100 000 (about 60 bytes a route plus its key: some 10 MB when full, with short keys).</value>
    public int RouteCapacity { get; init; } = 100_000;

    /// <summary>
    /// The PEM file of the CAs the cluster trusts (<c>ca.crt</c>), for a secured cluster: its endpoints are then
    /// <c>https</c>, and a manager is accepted only with a manager certificate from one of these CAs (not the machine's
    /// trusted roots; host names are not checked). Without it, <c>https</c> endpoints are checked against the machine's
    /// trusted roots, as behind a TLS-terminating proxy with a public certificate.
    /// </summary>
    /// <value>None.</value>
    public string? CertificateAuthorityFile { get; init; }

    /// <summary>
    /// The client certificate to present (PEM), issued by the cluster's CA with the caller's name and roles; with
    /// <see cref="KeyFile"/>. Or give <see cref="Certificate"/>, or a <see cref="BearerToken"/>.
    /// </summary>
    /// <value>None.</value>
    public string? CertificateFile { get; init; }

    /// <summary>The private key of <see cref="CertificateFile"/> (PEM).</summary>
    /// <value>None.</value>
    public string? KeyFile { get; init; }

    /// <summary>The client certificate to present, with its private key, in place of <see cref="CertificateFile"/>; the caller keeps it alive while the client is used and disposes it.</summary>
    /// <value>None.</value>
    public X509Certificate2? Certificate { get; init; }

    /// <summary>
    /// A JSON Web Token sent as <c>authorization: Bearer</c> with every call, signed with a key the managers accept
    /// (<c>Quintet:Security:Jwt</c>); its name and roles claims are the caller's. Sent over <c>https</c> only.
    /// </summary>
    /// <value>None.</value>
    public string? BearerToken { get; init; }

    /// <summary>Checks the options, naming the property that is wrong; returns the endpoints normalized.</summary>
    /// <exception cref="ArgumentException">A property is out of range.</exception>
    internal static IReadOnlyList<string> Validate(QuintetClientOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (options.Endpoints is null || options.Endpoints.Count == 0)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(Endpoints)} is empty: give at least one manager's gRPC endpoint, for example http://127.0.0.1:5053.", nameof(options));
        }

        var endpoints = new List<string>(options.Endpoints.Count);
        foreach (var endpoint in options.Endpoints)
        {
            if (!ManagerEndpoint.TryNormalize(endpoint, out var address))
            {
                throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(Endpoints)}: '{endpoint}' is not an absolute http or https address such as http://127.0.0.1:5053.", nameof(options));
            }

            if (!endpoints.Contains(address, StringComparer.Ordinal))
            {
                endpoints.Add(address);
            }
        }

        var hasCredentials = options.CertificateFile is not null || options.KeyFile is not null || options.Certificate is not null || options.BearerToken is not null;
        if ((options.CertificateAuthorityFile is not null || hasCredentials) && endpoints.FirstOrDefault(e => e.StartsWith("http:", StringComparison.Ordinal)) is { } plain)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(Endpoints)}: '{plain}' is http, but a CA, client certificate or bearer token is set: a secured cluster's endpoints are https, and credentials are never sent in the clear.", nameof(options));
        }

        if ((options.CertificateFile is null) != (options.KeyFile is null))
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(CertificateFile)} and {nameof(KeyFile)} go together: give both, or neither.", nameof(options));
        }

        if (options.CertificateFile is not null && options.Certificate is not null)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}: give {nameof(CertificateFile)} or {nameof(Certificate)}, not both.", nameof(options));
        }

        if (options.Certificate is { HasPrivateKey: false })
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(Certificate)} has no private key; a certificate presented in TLS needs one.", nameof(options));
        }

        if (options.FailoverBudget < TimeSpan.Zero)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(FailoverBudget)} is {options.FailoverBudget}; it must be zero (no retries) or more.", nameof(options));
        }

        if (options.AttemptDeadline is { } deadline && deadline <= TimeSpan.Zero)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(AttemptDeadline)} is {deadline}; it must be positive, or null for no deadline.", nameof(options));
        }

        if (options.KeepAliveTime is { } keepAlive && keepAlive < TimeSpan.FromSeconds(1))
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(KeepAliveTime)} is {keepAlive}; it must be 1 s or more, or null for no keepalive pings.", nameof(options));
        }

        if (options.KeepAliveTimeout < TimeSpan.FromSeconds(1))
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(KeepAliveTimeout)} is {options.KeepAliveTimeout}; it must be 1 s or more.", nameof(options));
        }

        if (options.RouteCapacity < 0)
        {
            throw new ArgumentException($"{nameof(QuintetClientOptions)}.{nameof(RouteCapacity)} is {options.RouteCapacity}; it must be zero (no routing) or more.", nameof(options));
        }

        return endpoints;
    }
}
