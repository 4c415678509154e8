using Grpc.Core;
using Grpc.Net.Client;

namespace Quintet.AdminClient;

/// <summary>
/// Admin calls to any of a list of managers: each call goes to the manager that answered last, and to the next one in
/// the list when that one cannot be reached, so that an administrator's tool keeps working while a manager or its
/// node is down. One channel per manager, opened on first use with the same credentials.
/// </summary>
/// <remarks>
/// A call that changes something is sent to another manager only when the first could not be connected to at all
/// (the request never left); a read is sent on after any <c>UNAVAILABLE</c>, which also covers a manager that is not
/// ready or that fell silent mid-call. A refusal (<c>UNAUTHENTICATED</c>, <c>PERMISSION_DENIED</c>) or a failed TLS
/// handshake is the same at every manager and is not retried.
/// </remarks>
public sealed class AdminFailover : IDisposable
{
    private readonly Uri[] _endpoints;
    private readonly AdminCredentials _credentials;
    private readonly AdminChannelSettings _settings;
    private readonly GrpcChannel?[] _channels;
    private readonly Dictionary<Uri, GrpcChannel> _others = [];
    private readonly Lock _lock = new();
    private int _current;
    private bool _disposed;

    /// <summary>Calls go to <paramref name="endpoints"/>, the first one first, presenting <paramref name="credentials"/>.</summary>
    /// <exception cref="ArgumentException">No endpoint, or one that is not http(s) or would send credentials in the clear.</exception>
    public AdminFailover(IReadOnlyList<Uri> endpoints, AdminCredentials credentials, AdminChannelSettings? settings = null)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentNullException.ThrowIfNull(credentials);
        if (endpoints.Count == 0)
        {
            throw new ArgumentException("Give at least one manager endpoint (for example https://10.0.0.1:5053).", nameof(endpoints));
        }

        foreach (var endpoint in endpoints)
        {
            if (AdminChannels.CheckEndpoint(endpoint, credentials) is { } wrong)
            {
                throw new ArgumentException(wrong, nameof(endpoints));
            }
        }

        _endpoints = [.. endpoints];
        _credentials = credentials;
        _settings = settings ?? new AdminChannelSettings();
        _channels = new GrpcChannel?[_endpoints.Length];
    }

    /// <summary>Told of every manager given up on for a call, with the failure, before the next one is tried.</summary>
    public event Action<Uri, RpcException>? FailedOver;

    /// <summary>The managers, in the order they are tried.</summary>
    public IReadOnlyList<Uri> Endpoints => _endpoints;

    /// <summary>The manager the next call goes to first: the one that answered last.</summary>
    public Uri Current
    {
        get
        {
            lock (_lock)
            {
                return _endpoints[_current];
            }
        }
    }

    /// <summary>Why the last manager certificate was refused, if one was.</summary>
    public string? RefusedServer { get; private set; }

    /// <summary>
    /// Runs <paramref name="call"/> on the current manager, then on each next one while the failure says the manager
    /// cannot be reached (see the remarks on the class). The last failure is thrown when no manager answers.
    /// </summary>
    /// <param name="call">The call, given a manager's call invoker.</param>
    /// <param name="changesSomething">Whether the call is an action: it is then retried only when it never left.</param>
    public async Task<T> InvokeAsync<T>(Func<CallInvoker, Task<T>> call, bool changesSomething = false)
    {
        ArgumentNullException.ThrowIfNull(call);
        int first;
        lock (_lock)
        {
            first = _current;
        }

        for (var attempt = 0; ; attempt++)
        {
            var index = (first + attempt) % _endpoints.Length;
            try
            {
                var result = await call(Channel(index).CreateCallInvoker());
                lock (_lock)
                {
                    _current = index;
                }

                return result;
            }
            catch (RpcException e) when (attempt + 1 < _endpoints.Length && ShouldTryNext(e, changesSomething))
            {
                // Moved on before the next one answers: should this call be cancelled meanwhile (a page closed), the
                // next call still starts past the manager that was found unreachable.
                MoveOn(index);
                FailedOver?.Invoke(_endpoints[index], e);
            }
        }
    }

    /// <summary>
    /// Says that <paramref name="endpoint"/> was found unreachable outside <see cref="InvokeAsync{T}"/> (a stream that
    /// broke, for example): when it is the current manager, the next call goes to the next one. Raises
    /// <see cref="FailedOver"/>.
    /// </summary>
    public void PassOver(Uri endpoint, RpcException failure)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        ArgumentNullException.ThrowIfNull(failure);
        var index = Array.IndexOf(_endpoints, endpoint);
        if (index < 0)
        {
            return;
        }

        MoveOn(index);
        FailedOver?.Invoke(endpoint, failure);
    }

    /// <summary>
    /// A call invoker for one manager, with the same credentials, for a request about what that manager alone holds (no
    /// failover): a manager of the list, or another that a manager reported (its gRPC endpoint).
    /// </summary>
    /// <exception cref="ArgumentException">The endpoint is not http(s), or would get credentials in the clear.</exception>
    public CallInvoker InvokerFor(Uri endpoint)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        var index = Array.IndexOf(_endpoints, endpoint);
        if (index >= 0)
        {
            return Channel(index).CreateCallInvoker();
        }

        if (AdminChannels.CheckEndpoint(endpoint, _credentials) is { } wrong)
        {
            throw new ArgumentException(wrong, nameof(endpoint));
        }

        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_others.TryGetValue(endpoint, out var channel))
            {
                channel = AdminChannels.Open(endpoint, _credentials, _settings, reason => RefusedServer = reason);
                _others[endpoint] = channel;
            }

            return channel.CreateCallInvoker();
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        lock (_lock)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            foreach (var channel in _channels.Concat(_others.Values))
            {
                channel?.Dispose();
            }
        }
    }

    private static bool ShouldTryNext(RpcException e, bool changesSomething) =>
        changesSomething ? AdminChannels.IsConnectionFailure(e) : e.StatusCode == StatusCode.Unavailable && !AdminChannels.IsTlsFailure(e);

    private void MoveOn(int unreachable)
    {
        lock (_lock)
        {
            // Only when nothing answered since: a concurrent call may have found a manager that works.
            if (_current == unreachable)
            {
                _current = (unreachable + 1) % _endpoints.Length;
            }
        }
    }

    private GrpcChannel Channel(int index)
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            return _channels[index] ??= AdminChannels.Open(_endpoints[index], _credentials, _settings, reason => RefusedServer = reason);
        }
    }
}
