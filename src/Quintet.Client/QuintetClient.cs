using System.Reflection;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using ProtoBuf.Grpc.Configuration;
using Quintet.Components;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>
/// A connection to a Quintet cluster, handing out typed proxies to component instances. Proxies are generated once per
/// contract (by protobuf-net.Grpc) and are cheap to create; calls on them are plain gRPC unary calls, with the
/// instance key in a header.
/// </summary>
/// <remarks>
/// <para>
/// <b>Routing.</b> Each keyed instance lives on one manager, its owner; a manager called for an instance it does not
/// own passes the call on and names the owner in the <c>quintet-served-by</c> response header. A client made by
/// <see cref="Connect(QuintetClientOptions)"/> remembers the owner per contract and key (up to
/// <see cref="QuintetClientOptions.RouteCapacity"/> routes) and sends later calls there directly, through one channel
/// per manager. It only ever calls the configured endpoints and endpoints a manager named.
/// </para>
/// <para>
/// <b>Failover.</b> A call that fails with <c>UNAVAILABLE</c> (or whose manager closes the connection as it stops, which grpc-dotnet reports as <c>INTERNAL</c>) — the manager is down or refuses connections, is cut off
/// from the majority of the cluster, or asks for a retry while the instance moves — forgets its route and is tried
/// again on the next configured endpoint (round robin), backing off from 50 ms to 500 ms, until
/// <see cref="QuintetClientOptions.FailoverBudget"/> is spent; then it throws the last <see cref="RpcException"/>, its
/// message saying so. The client also follows the managers' view (<see cref="QuintetClientOptions.FollowView"/>): when
/// the view leaves a manager out, the attempts in flight on it are cancelled and retried elsewhere at once, and it gets
/// no calls until it is back in a view. The instances of a crashed manager are placed again on a survivor by the first call after the
/// cluster has removed that manager (a few seconds), so calls on them succeed again within the budget; an instance
/// that keeps no checkpoint starts afresh there. Every other status (<c>INVALID_ARGUMENT</c>,
/// <c>FAILED_PRECONDITION</c>, <c>UNKNOWN</c>, <c>DEADLINE_EXCEEDED</c>, ...) is the call's answer and is thrown at
/// once, never retried.
/// </para>
/// <para>
/// <b>Exactly once, where the records reach.</b> Every call carries <see cref="ClientId"/> and its own number (the
/// same on each retry), and the instance's owner records each call's answer: a retry of a call that ran gets the
/// recorded answer and runs nothing, including after a migration, a retirement, and the promotion of a primary/backup
/// instance whose component sends its state to its backups before it answers. Where no record reaches (an instance
/// rebuilt from its checkpoint stream alone, isolated and actively replicated classes, operations marked
/// <c>[ReadOnlyOperation]</c>), a call retried after a connection broke mid-call may be applied twice: make such
/// operations idempotent. docs/client.md states the guarantee event by event.
/// </para>
/// </remarks>
public sealed class QuintetClient : IDisposable
{
    private static readonly ClientFactory Factory = ClientFactory.Create(BinderConfiguration.Create(binder: new ContractBinder()));
    private static readonly QuintetClientStatistics NoStatistics = new(0, 0, 0, 0, 0);

    // Exactly one of the two: a connection that routes and fails over, or a caller's channel used as it is.
    private readonly ClusterConnection? _connection;
    private readonly GrpcChannel? _channel;

    private QuintetClient(ClusterConnection connection) => _connection = connection;

    private QuintetClient(GrpcChannel channel) => _channel = channel;

    /// <summary>
    /// Connects to the cluster through the manager at <paramref name="endpoint"/>, for example
    /// <c>http://127.0.0.1:5053</c>, with the default <see cref="QuintetClientOptions"/>: calls are routed to the
    /// owner of their instance, and retried (on this endpoint) while it answers <c>UNAVAILABLE</c>.
    /// </summary>
    /// <exception cref="ArgumentException"><paramref name="endpoint"/> is not an absolute http or https address.</exception>
    public static QuintetClient Connect(string endpoint)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(endpoint);
        return Connect(new QuintetClientOptions { Endpoints = [endpoint] });
    }

    /// <summary>
    /// Connects to the cluster through the managers at <paramref name="endpoints"/>, with the default
    /// <see cref="QuintetClientOptions"/>: a call goes to the first until it fails with <c>UNAVAILABLE</c>, then to the
    /// next, within the 10 s failover budget.
    /// </summary>
    /// <exception cref="ArgumentException">No endpoint given, or one is not an absolute http or https address.</exception>
    public static QuintetClient Connect(params string[] endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return Connect(new QuintetClientOptions { Endpoints = endpoints });
    }

    /// <summary>Connects to the cluster as <paramref name="options"/> say; channels open on each manager's first call.</summary>
    /// <exception cref="ArgumentException">An option is out of range; the message names it.</exception>
    public static QuintetClient Connect(QuintetClientOptions options)
    {
        var endpoints = QuintetClientOptions.Validate(options);
        return new QuintetClient(new ClusterConnection(endpoints, options));
    }

    /// <summary>
    /// Uses an existing channel (its owner disposes it) for every call, as it is: no routing to owners and no failover,
    /// since the client cannot open channels to other managers with that channel's settings. Each call takes the path
    /// the manager behind the channel gives it.
    /// </summary>
    public static QuintetClient Over(GrpcChannel channel) => new(channel ?? throw new ArgumentNullException(nameof(channel)));

    /// <summary>The configured endpoints, normalized (empty for a client made by <see cref="Over"/>).</summary>
    public IReadOnlyList<string> Endpoints => _connection?.Endpoints ?? [];

    /// <summary>
    /// This client's identity in the managers' completion records (32 hexadecimal digits, random per client), sent with
    /// every call with the call's number (1, 2, 3, ... in the order calls start, the same on each retry of one call);
    /// null for a client made by <see cref="Over"/> or with <see cref="QuintetClientOptions.ExactlyOnce"/> off, which send neither.
    /// </summary>
    public string? ClientId => _connection is { Options.ExactlyOnce: true } connection ? connection.Calls.ClientId : null;

    /// <summary>
    /// Counters for diagnostics: calls made, how many went straight to their instance's owner, how many took a hop,
    /// retries, routes known. All zero for a client made by <see cref="Over"/>.
    /// </summary>
    public QuintetClientStatistics Statistics => _connection?.Statistics ?? NoStatistics;

    /// <summary>
    /// A proxy to the instance of the component serving <typeparamref name="TContract"/> with <paramref name="key"/>
    /// (for example <c>"acct-42"</c>); the instance is activated on its first call. Errors come back as
    /// <see cref="RpcException"/> with a status and a message that says what to change. Where no completion record
    /// reaches, a call may be applied twice when it fails over after a connection broke mid-call: see <see cref="QuintetClient"/>.
    /// </summary>
    /// <exception cref="ArgumentException"><typeparamref name="TContract"/> is not marked <see cref="ComponentContractAttribute"/>.</exception>
    public TContract GetComponent<TContract>(string key)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(key);
        if (typeof(TContract).GetCustomAttribute<ComponentContractAttribute>() is null)
        {
            throw new ArgumentException($"{typeof(TContract).FullName} is not a component contract: mark it [ComponentContract(\"service.name\")].", nameof(TContract));
        }

        if (_connection is not null)
        {
            return Factory.CreateClient<TContract>(new KeyedCallInvoker(_connection, key));
        }

        var invoker = _channel!.Intercept(metadata =>
        {
            metadata.Add(CallHeaders.Key, key);
            return metadata;
        });
        return Factory.CreateClient<TContract>(invoker);
    }

    /// <summary>
    /// A call invoker for the instance with <paramref name="key"/> of any contract: each unary call on it is routed,
    /// failed over and numbered exactly as a proxy's (<see cref="GetComponent{TContract}"/>), whatever its
    /// <see cref="Method{TRequest, TResponse}"/> and marshallers: a <c>Method&lt;byte[], byte[]&gt;</c> with pass-through
    /// marshallers forwards a call without decoding it (the local proxy does). The service name of the call's method is
    /// the contract its routes are learned for. A call whose headers already carry <c>quintet-call</c> (a caller
    /// that numbers its own calls) keeps it, and is retried under it; any other
    /// call gets this client's identity. For a client made by <see cref="Over"/>, the channel's invoker with the key
    /// header added.
    /// </summary>
    public CallInvoker CreateCallInvoker(string key)
    {
        ArgumentNullException.ThrowIfNull(key);
        if (_connection is not null)
        {
            return new KeyedCallInvoker(_connection, key, keepCallerIdentity: true);
        }

        return _channel!.Intercept(metadata =>
        {
            metadata.Add(CallHeaders.Key, key);
            return metadata;
        });
    }

    /// <summary>
    /// The managers' view this client follows (<see cref="QuintetClientOptions.FollowView"/>): null before the first
    /// view arrived (the watches start with the first call), with <see cref="QuintetClientOptions.FollowView"/> off,
    /// and for a client made by <see cref="Over"/>.
    /// </summary>
    public QuintetManagersView? ManagersView => _connection?.View;

    /// <summary>
    /// The managers this client knows: the configured endpoints first, then those managers named as owners (empty for
    /// a client made by <see cref="Over"/>).
    /// </summary>
    public IReadOnlyList<string> KnownEndpoints => _connection?.KnownEndpoints ?? [];

    /// <summary>
    /// Up to <paramref name="max"/> of the routes this client has learned (contract and key to the owning manager), for
    /// diagnostics; empty for a client made by <see cref="Over"/>.
    /// </summary>
    public IReadOnlyList<QuintetRoute> GetRoutes(int max = int.MaxValue)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(max);
        return _connection?.Routes.Snapshot(max) ?? [];
    }

    /// <summary>
    /// The invoker of the channel (with this client's credentials) to one of <see cref="KnownEndpoints"/>, for calls
    /// about that manager itself, such as its <c>grpc.health.v1</c> health; no routing and no failover.
    /// </summary>
    /// <exception cref="ArgumentException"><paramref name="endpoint"/> is not one of <see cref="KnownEndpoints"/>.</exception>
    public CallInvoker GetManagerInvoker(string endpoint)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        return _connection?.Known(endpoint)?.Invoker
            ?? throw new ArgumentException($"'{endpoint}' is not a manager this client knows (QuintetClient.KnownEndpoints: {string.Join(", ", KnownEndpoints)}).", nameof(endpoint));
    }

    /// <summary>
    /// Creates a fresh instance of the class serving <typeparamref name="TContract"/> (its QoS says
    /// <c>instancing: fresh</c>): the class factory picks its key and may pick its manager. Returns the key and a proxy;
    /// the instance is activated on its first call. Call <see cref="DestroyInstanceAsync{TContract}"/> when done with it.
    /// </summary>
    /// <exception cref="RpcException">NOT_FOUND for a contract no class serves; FAILED_PRECONDITION for a keyed class.</exception>
    public async Task<(string Key, TContract Instance)> CreateInstanceAsync<TContract>(CancellationToken cancellationToken = default)
        where TContract : class
    {
        var contract = ContractName<TContract>();
        var response = await InstancesCallAsync(
            invoker => new Protocol.Admin.ComponentInstances.ComponentInstancesClient(invoker).CreateInstanceAsync(new Protocol.Admin.CreateInstanceRequest { Contract = contract }, cancellationToken: cancellationToken).ResponseAsync);
        return (response.Key, GetComponent<TContract>(response.Key));
    }

    /// <summary>Destroys a fresh instance: it is deactivated, forgotten, and its checkpoint stream deleted.</summary>
    /// <exception cref="RpcException">NOT_FOUND when no such instance exists.</exception>
    public async Task DestroyInstanceAsync<TContract>(string key, CancellationToken cancellationToken = default)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(key);
        var contract = ContractName<TContract>();
        await InstancesCallAsync(
            invoker => new Protocol.Admin.ComponentInstances.ComponentInstancesClient(invoker).DestroyInstanceAsync(new Protocol.Admin.DestroyInstanceRequest { Contract = contract, Key = key }, cancellationToken: cancellationToken).ResponseAsync);
    }

    /// <summary>Runs a create or destroy on the manager in use, moving on to the next one while managers are unavailable.</summary>
    private async Task<T> InstancesCallAsync<T>(Func<CallInvoker, Task<T>> call)
    {
        if (_connection is null)
        {
            return await call(_channel!.CreateCallInvoker());
        }

        for (var attempt = 1; ; attempt++)
        {
            var endpoint = _connection.Current;
            try
            {
                return await call(endpoint.Invoker);
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.Unavailable && attempt < _connection.Endpoints.Count)
            {
                _connection.MoveOnFrom(endpoint);
            }
        }
    }

    private static string ContractName<TContract>() =>
        typeof(TContract).GetCustomAttribute<ComponentContractAttribute>()?.Name
        ?? throw new ArgumentException($"{typeof(TContract).FullName} is not a component contract: mark it [ComponentContract(\"service.name\")].", nameof(TContract));

    /// <summary>Closes the channels this client opened (not a channel given to <see cref="Over"/>).</summary>
    public void Dispose() => _connection?.Dispose();

    /// <summary>Binds interfaces marked <see cref="ComponentContractAttribute"/>, each method by its name without Async.</summary>
    private sealed class ContractBinder : ServiceBinder
    {
        public override bool IsServiceContract(Type contractType, out string? name)
        {
            name = contractType.GetCustomAttribute<ComponentContractAttribute>()?.Name;
            return name is not null;
        }

        public override bool IsOperationContract(MethodInfo method, out string? name)
        {
            name = method.Name.EndsWith("Async", StringComparison.Ordinal) && method.Name.Length > 5 ? method.Name[..^5] : method.Name;
            return true;
        }
    }
}
