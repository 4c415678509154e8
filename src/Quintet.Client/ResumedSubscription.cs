using System.Diagnostics;
using System.Globalization;
using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>An event as a subscription reads it: its position in the instance's log and the event itself.</summary>
internal sealed class PositionedEvent<TEvent>(long position, TEvent value)
{
    public long Position { get; } = position;

    public TEvent Value { get; } = value;
}

/// <summary>
/// One subscription to an instance's events (a server-streaming operation) through a <see cref="ClusterConnection"/>:
/// opened on the manager owning the instance if the client knows it, else on the configured endpoint in use; when the
/// stream breaks (<c>UNAVAILABLE</c>: the owner's manager failed or stopped, the instance moved, a lost connection) it is
/// opened again on the next manager, after the position of the last event the reader got (<c>quintet-events-after</c>,
/// with the log it came from), with the unary calls' backoff, until the failover budget is spent within one outage. A
/// client that follows the managers' view also breaks the stream itself when the view leaves its manager out (a manager
/// paused or cut off answers nothing, and its connection would only fail with the keep-alive), and resumes at once. So
/// the reader sees every event once, in order, across failover, migration and retirement; any other status ends it
/// (<c>OUT_OF_RANGE</c>: the events after its position are no longer retained; <c>DATA_LOSS</c>: the log was lost).
/// </summary>
internal sealed class ResumedSubscription<TRequest, TResponse> : IAsyncStreamReader<TResponse>
    where TRequest : class
    where TResponse : class
{
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromMilliseconds(500);

    private readonly ClusterConnection _connection;
    private readonly Method<TRequest, PositionedEvent<TResponse>> _method;
    private readonly string _service;
    private readonly string? _host;
    private readonly CallOptions _options;
    private readonly TRequest _request;
    private readonly string _key;
    private readonly Metadata _headers;
    private readonly TaskCompletionSource<Metadata> _responseHeaders = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private AsyncServerStreamingCall<PositionedEvent<TResponse>>? _attempt;
    private CancellationTokenSource? _attemptCancellation;
    private CancellationToken _departure;
    private ManagerEndpoint? _endpoint;
    private bool _direct;
    private bool _attemptStarted;
    private long? _after;
    private string? _log;
    private Status? _status;
    private volatile bool _disposed;

    private ResumedSubscription(ClusterConnection connection, Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request, string key)
    {
        _connection = connection;
        _service = method.ServiceName;
        _host = host;
        _options = options;
        _request = request;
        _key = key;
        var inner = method.ResponseMarshaller;
        var events = Marshallers.Create<PositionedEvent<TResponse>>(
            static (_, _) => throw new NotSupportedException("Events are read, never written, by a client."),
            context => new PositionedEvent<TResponse>(EventFrames.ReadPosition(context.PayloadAsReadOnlySequence()), inner.ContextualDeserializer(context)));
        _method = new Method<TRequest, PositionedEvent<TResponse>>(MethodType.ServerStreaming, method.ServiceName, method.Name, method.RequestMarshaller, events);
        _headers = [];
        foreach (var entry in options.Headers ?? [])
        {
            if (string.Equals(entry.Key, CallHeaders.EventsAfter, StringComparison.OrdinalIgnoreCase))
            {
                // A caller that kept its position (across restarts of its own) resumes from it.
                _after = long.TryParse(entry.Value, NumberStyles.None, CultureInfo.InvariantCulture, out var after) ? after : null;
            }
            else if (string.Equals(entry.Key, CallHeaders.EventLog, StringComparison.OrdinalIgnoreCase))
            {
                _log = entry.Value;
            }
            else if (!string.Equals(entry.Key, CallHeaders.Key, StringComparison.OrdinalIgnoreCase) && !string.Equals(entry.Key, CallHeaders.Call, StringComparison.OrdinalIgnoreCase))
            {
                _headers.Add(entry);
            }
        }

        _headers.Add(CallHeaders.Key, key);
    }

    /// <summary>Starts the subscription; its first attempt opens with the reader's first read.</summary>
    public static AsyncServerStreamingCall<TResponse> Start(ClusterConnection connection, Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request, string key)
    {
        var subscription = new ResumedSubscription<TRequest, TResponse>(connection, method, host, options, request, key);
        connection.CountCall();
        return new AsyncServerStreamingCall<TResponse>(subscription, subscription._responseHeaders.Task, subscription.GetStatus, subscription.GetTrailers, subscription.Dispose);
    }

    /// <inheritdoc />
    public TResponse Current { get; private set; } = null!;

    /// <inheritdoc />
    public async Task<bool> MoveNext(CancellationToken cancellationToken)
    {
        long? outage = null;
        var backoff = FirstBackoff;
        List<string>? tried = null;
        while (true)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var attempt = _attempt ?? Open();
            try
            {
                if (!_attemptStarted)
                {
                    var headers = await attempt.ResponseHeadersAsync.ConfigureAwait(false);
                    _attemptStarted = true;
                    _connection.Learn(_service, _key, _endpoint!, routed: _direct, headers);
                    _log = headers.GetValue(CallHeaders.EventLog) ?? _log;
                    _responseHeaders.TrySetResult(headers);
                }

                if (!await attempt.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false))
                {
                    _status = attempt.GetStatus();
                    return false;
                }

                var next = attempt.ResponseStream.Current;
                if (next.Position > 0)
                {
                    _after = next.Position;
                }

                Current = next.Value;
                return true;
            }
            catch (RpcException e) when ((e.StatusCode == StatusCode.Unavailable || ConnectionLost(e) || LeftView(e)) && !cancellationToken.IsCancellationRequested && !_options.CancellationToken.IsCancellationRequested && !_disposed)
            {
                // The owner's manager failed, stopped or left the view, the instance moved, or the connection broke:
                // open the subscription again after the last event read, on the manager that owns the instance now.
                var endpoint = _endpoint!;
                if (_direct)
                {
                    _connection.Routes.Forget(_service, _key, endpoint);
                }

                _connection.MoveOnFrom(endpoint);
                attempt.Dispose();
                _attempt = null;
                tried ??= [];
                if (!tried.Contains(endpoint.Address))
                {
                    tried.Add(endpoint.Address);
                }

                outage ??= Stopwatch.GetTimestamp();
                var elapsed = Stopwatch.GetElapsedTime(outage.Value);
                var budget = _connection.Options.FailoverBudget;
                if (elapsed + backoff >= budget)
                {
                    var detail = string.Create(CultureInfo.InvariantCulture, $"{e.Status.Detail} (the subscription gave up resuming after {elapsed.TotalSeconds:0.###} s: the failover budget (QuintetClientOptions.FailoverBudget, {budget.TotalSeconds:0.###} s) is spent; managers tried: {string.Join(", ", tried)}; last event read: {_after?.ToString(CultureInfo.InvariantCulture) ?? "none"})");
                    _status = new Status(e.StatusCode, detail, e.Status.DebugException);
                    throw new RpcException(_status.Value, e.Trailers);
                }

                _connection.CountRetry();
                await Task.Delay(backoff, cancellationToken).ConfigureAwait(false);
                backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxBackoff.Ticks));
            }
            catch (RpcException e)
            {
                _status = e.Status;
                _responseHeaders.TrySetResult([]);
                throw;
            }
        }
    }

    /// <summary>Opens one attempt, after the last event read (and in the log it came from).</summary>
    private AsyncServerStreamingCall<PositionedEvent<TResponse>> Open()
    {
        _direct = _connection.Routes.TryGet(_service, _key, out var endpoint);
        endpoint ??= _connection.Current;
        if (_direct)
        {
            _connection.CountDirect();
        }

        var headers = new Metadata();
        foreach (var entry in _headers)
        {
            headers.Add(entry);
        }

        if (_after is { } after)
        {
            headers.Add(CallHeaders.EventsAfter, after.ToString(CultureInfo.InvariantCulture));
            if (_log is not null)
            {
                headers.Add(CallHeaders.EventLog, _log);
            }
        }

        // The attempt also ends when the managers' view leaves its manager out, to be resumed elsewhere at once.
        _attemptCancellation?.Dispose();
        var attemptToken = _connection.AttemptToken(endpoint, _options.CancellationToken, out _departure, out _attemptCancellation);

        var options = new CallOptions(headers, _options.Deadline, attemptToken, _options.WriteOptions, _options.PropagationToken, _options.Credentials);
        try
        {
            _attempt = endpoint.Invoker.AsyncServerStreamingCall(_method, _host, options, _request);
        }
        catch (ObjectDisposedException e)
        {
            throw new RpcException(new Status(StatusCode.Cancelled, "The QuintetClient was disposed.", e));
        }

        _endpoint = endpoint;
        _attemptStarted = false;
        return _attempt;
    }

    /// <summary>
    /// A stream whose connection broke under it (grpc-dotnet says <c>INTERNAL</c> where other libraries say
    /// <c>UNAVAILABLE</c>). Broader than a unary call's test: reading events again after a position applies nothing.
    /// </summary>
    private static bool ConnectionLost(RpcException e) =>
        e.StatusCode == StatusCode.Internal && e.Status.DebugException is HttpRequestException or IOException;

    /// <summary>Whether the attempt ended because the managers' view left its manager out, not because the reader cancelled.</summary>
    private bool LeftView(RpcException e) =>
        e.StatusCode == StatusCode.Cancelled && _departure.IsCancellationRequested;

    private Status GetStatus() =>
        _status ?? throw new InvalidOperationException("The subscription has not ended yet: its status is known only then.");

    private Metadata GetTrailers() =>
        _attempt?.GetTrailers() ?? [];

    private void Dispose()
    {
        _disposed = true;
        _attempt?.Dispose();
        _attemptCancellation?.Dispose();
        _responseHeaders.TrySetResult([]);
    }
}
