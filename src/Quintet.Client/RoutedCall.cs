using System.Diagnostics;
using System.Globalization;
using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>
/// One unary call through a <see cref="ClusterConnection"/>: sent to the manager owning its instance if the client
/// knows it, else to the configured endpoint in use; on <c>UNAVAILABLE</c> retried on the next manager with a short
/// backoff until the failover budget (or the caller's deadline) is spent. Any other status is the call's answer.
/// </summary>
internal sealed class RoutedCall<TRequest, TResponse> : IDisposable
    where TRequest : class
    where TResponse : class
{
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromMilliseconds(500);

    private readonly ClusterConnection _connection;
    private readonly Method<TRequest, TResponse> _method;
    private readonly string? _host;
    private readonly CallOptions _options;
    private readonly TRequest _request;
    private readonly string _key;
    private readonly Metadata _headers;

    // The call's number among the client's calls; 0 when the client adds no identity: ExactlyOnce is off, or the caller
    // numbers its own calls (quintet-call in its headers, kept on request) and its identity
    // goes to the managers unchanged.
    private readonly long _sequence;
    private readonly TaskCompletionSource<Metadata> _responseHeaders = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Made only when a retry has to wait: the caller's token, or disposing the call, ends that wait.
    private CancellationTokenSource? _retryWait;
    private AsyncUnaryCall<TResponse>? _last;
    private Status? _status;
    private volatile bool _finished;
    private volatile bool _disposed;

    private RoutedCall(ClusterConnection connection, Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request, string key, Metadata keyHeaders, bool keepCallerIdentity)
    {
        _connection = connection;
        _method = method;
        _host = host;
        _options = options;
        _request = request;
        _key = key;
        var callerIdentity = false;
        if (options.Headers is not { Count: > 0 } callerHeaders)
        {
            // Most calls carry no headers of their own: they share the proxy's, which hold the key alone.
            _headers = keyHeaders;
        }
        else
        {
            callerIdentity = keepCallerIdentity && callerHeaders.Get(CallHeaders.Call) is not null;
            _headers = [];
            foreach (var entry in callerHeaders)
            {
                if (!IsOwnHeader(entry.Key) || (callerIdentity && IsIdentityHeader(entry.Key)))
                {
                    _headers.Add(entry);
                }
            }

            _headers.Add(CallHeaders.Key, key);
        }

        _sequence = connection.Options.ExactlyOnce && !callerIdentity ? connection.Calls.Start() : 0;
    }

    private static bool IsIdentityHeader(string name) => string.Equals(name, CallHeaders.Call, StringComparison.OrdinalIgnoreCase);

    /// <summary>The headers the client sets itself; a caller's own values for them are left out.</summary>
    private static bool IsOwnHeader(string name) =>
        string.Equals(name, CallHeaders.Key, StringComparison.OrdinalIgnoreCase) || IsIdentityHeader(name);

    /// <summary>
    /// One attempt's headers: the call's, and <c>quintet-call</c> with the client's id and the call's number (the same on
    /// every attempt, so that the owner answers a retry of a call that already ran from its record) and the client's
    /// acknowledgement watermark as it stands.
    /// </summary>
    private Metadata AttemptHeaders(Metadata callHeaders)
    {
        if (_sequence == 0)
        {
            // The client adds no identity (ExactlyOnce off, or the caller's own numbering, sent on each attempt as it came).
            return callHeaders;
        }

        var calls = _connection.Calls;
        Metadata headers = [];
        foreach (var entry in callHeaders)
        {
            headers.Add(entry);
        }

        headers.Add(CallHeaders.Call, calls.CallHeader(_sequence));
        return headers;
    }

    /// <summary>
    /// Starts the call; the returned call's response completes after the last attempt. <paramref name="keyHeaders"/> holds
    /// the <c>quintet-key</c> header alone, and is sent as it is (never changed) when the caller adds no headers.
    /// <paramref name="keepCallerIdentity"/>: a call whose headers carry its own <c>quintet-call</c> keeps it (else the
    /// client's identity replaces it).
    /// </summary>
    public static AsyncUnaryCall<TResponse> Start(ClusterConnection connection, Method<TRequest, TResponse> method, string? host, CallOptions options, TRequest request, string key, Metadata keyHeaders, bool keepCallerIdentity = false)
    {
        var call = new RoutedCall<TRequest, TResponse>(connection, method, host, options, request, key, keyHeaders, keepCallerIdentity);
        return new AsyncUnaryCall<TResponse>(call.RunAsync(), call._responseHeaders.Task, call.GetStatus, call.GetTrailers, call.Dispose);
    }

    private async Task<TResponse> RunAsync()
    {
        var started = Stopwatch.GetTimestamp();

        // The call's span (null when nobody listens) is current for its attempts, and named in their headers.
        var activity = ClientTelemetry.StartCall(_method, _key);
        var headers = activity is null ? _headers : ClientTelemetry.Propagate(activity, _headers);
        var outcome = Status.DefaultSuccess;
        try
        {
            _connection.CountCall();
            var budget = _connection.Options.FailoverBudget;
            var cancellationToken = _options.CancellationToken;
            DateTime? callerDeadline = _options.Deadline is { } given && given != DateTime.MaxValue ? given.ToUniversalTime() : null;
            var backoff = FirstBackoff;
            List<string>? tried = null;
            for (var attempt = 1; ; attempt++)
            {
                var direct = _connection.Routes.TryGet(_method.ServiceName, _key, out var endpoint);
                if (direct && endpoint!.Excluded)
                {
                    // Learned from an answer that came as the view left the owner out: its successor is asked for.
                    _connection.Routes.Forget(_method.ServiceName, _key, endpoint);
                    (direct, endpoint) = (false, null);
                }

                endpoint ??= _connection.Current;
                if (direct)
                {
                    _connection.CountDirect();
                }

                var deadline = callerDeadline ?? (_connection.Options.AttemptDeadline is { } perAttempt ? DateTime.UtcNow + perAttempt : null);
                ClientTelemetry.Attempt(activity, endpoint);
                var attemptToken = _connection.AttemptToken(endpoint, cancellationToken, out var departure, out var linked);

                var options = new CallOptions(AttemptHeaders(headers), deadline, attemptToken, _options.WriteOptions, _options.PropagationToken, _options.Credentials);
                AsyncUnaryCall<TResponse> call;
                try
                {
                    call = endpoint.Invoker.AsyncUnaryCall(_method, _host, options, _request);
                }
                catch (ObjectDisposedException e)
                {
                    linked?.Dispose();
                    throw new RpcException(new Status(StatusCode.Cancelled, "The QuintetClient was disposed.", e));
                }

                _last?.Dispose();
                _last = call;
                if (_disposed)
                {
                    // Disposed while this attempt started: Dispose may have missed it.
                    call.Dispose();
                }

                try
                {
                    var response = await call.ResponseAsync.ConfigureAwait(false);
                    var responseHeaders = await call.ResponseHeadersAsync.ConfigureAwait(false);
                    if (_connection.Learn(_method.ServiceName, _key, endpoint, routed: direct, responseHeaders) is { } servedBy)
                    {
                        ClientTelemetry.PassedOn(activity, _method, servedBy);
                    }

                    _responseHeaders.TrySetResult(responseHeaders);
                    return response;
                }
                catch (RpcException e) when ((e.StatusCode == StatusCode.Unavailable || TransportFailures.ConnectionLost(e) || LeftView(e, departure)) && !cancellationToken.IsCancellationRequested && !_disposed)
                {
                    // A manager the view left out may have started the call: the retry carries the same quintet-call, so
                    // that the successor answers from the completion record if it ran, and runs it if it did not.
                    var leftView = LeftView(e, departure);
                    var status = leftView
                        ? new Status(StatusCode.Unavailable, $"Manager {endpoint.Address} left the managers' view while the call was in flight.")
                        : e.Status;
                    // The manager is down, refused, is cut off from the majority, or asked for a retry: none of these ran
                    // the call (unless a connection broke while it ran). Forget a route that led here: the instance is
                    // placed again on a survivor, which the next manager will name.
                    if (direct)
                    {
                        _connection.Routes.Forget(_method.ServiceName, _key, endpoint);
                    }

                    _connection.MoveOnFrom(endpoint);
                    tried ??= [];
                    if (!tried.Contains(endpoint.Address))
                    {
                        tried.Add(endpoint.Address);
                    }

                    // A manager that could not be reached said nothing about the instance: another manager this call has
                    // not tried yet is asked at once (it holds the call until the cluster has a new owner for it). Answers
                    // that ask for patience (not ready, cut off, moving), and a second round over the managers, back off.
                    TimeSpan wait;
                    if ((leftView || e.Status.DebugException is not null) && !tried.Contains(NextEndpoint().Address))
                    {
                        wait = TimeSpan.Zero;
                    }
                    else
                    {
                        wait = backoff;
                        backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxBackoff.Ticks));
                    }

                    var elapsed = Stopwatch.GetElapsedTime(started);
                    var stop = elapsed + wait >= budget
                        ? $"the failover budget (QuintetClientOptions.FailoverBudget, {Seconds(budget)}) is spent"
                        : callerDeadline is { } end && DateTime.UtcNow + wait >= end ? "the call's deadline comes before another attempt could" : null;
                    if (stop is not null)
                    {
                        var detail = string.Create(CultureInfo.InvariantCulture, $"{status.Detail} (gave up after {attempt} attempt{(attempt == 1 ? "" : "s")} in {Seconds(elapsed)}: {stop}; managers tried: {string.Join(", ", tried)})");
                        throw Finish(call, new RpcException(new Status(status.StatusCode, detail, e.Status.DebugException), e.Trailers));
                    }

                    _connection.CountRetry();
                    ClientTelemetry.Retry(activity, _method, attempt, endpoint, status.StatusCode);
                    try
                    {
                        if (wait > TimeSpan.Zero)
                        {
                            await Task.Delay(wait, RetryWaitToken()).ConfigureAwait(false);
                        }
                    }
                    catch (OperationCanceledException)
                    {
                        throw Finish(call, new RpcException(new Status(StatusCode.Cancelled, "The call was cancelled while it waited to retry on another manager.")));
                    }
                }
                catch (RpcException e)
                {
                    throw Finish(call, e);
                }
                finally
                {
                    linked?.Dispose();
                }
            }
        }
        catch (RpcException e)
        {
            outcome = e.Status;
            throw;
        }
        catch (Exception e)
        {
            outcome = new Status(StatusCode.Unknown, e.Message);
            throw;
        }
        finally
        {
            // Unhooks the link to the caller's token, which may live much longer than this call.
            _finished = true;
            if (_sequence != 0)
            {
                _connection.Calls.Finish(_sequence);
            }

            _retryWait?.Dispose();

            // Whoever awaits the headers before the response must not wait forever on a call that failed otherwise.
            _responseHeaders.TrySetResult([]);
            ClientTelemetry.EndCall(activity, _method, outcome, started);
        }
    }

    /// <summary>The manager the next attempt goes to: the instance's learned owner, else the connection's current one.</summary>
    private ManagerEndpoint NextEndpoint() => _connection.Routes.TryGet(_method.ServiceName, _key, out var routed) ? routed : _connection.Current;

    /// <summary>The token a retry's wait ends on: the caller's, or this call's disposal.</summary>
    private CancellationToken RetryWaitToken()
    {
        _retryWait ??= CancellationTokenSource.CreateLinkedTokenSource(_options.CancellationToken);
        if (_disposed)
        {
            // Disposed before the wait had a token to cancel.
            _retryWait.Cancel();
        }

        return _retryWait.Token;
    }

    /// <summary>
    /// Whether the attempt ended because the managers' view left its manager out (<see cref="ManagerEndpoint.Departure"/>
    /// cancelled it), not because the caller cancelled: it is retried on another manager.
    /// </summary>
    private static bool LeftView(RpcException e, CancellationToken departure) =>
        e.StatusCode == StatusCode.Cancelled && departure.IsCancellationRequested;

    /// <summary>Ends the call with <paramref name="error"/>: its status and the last attempt's headers become the call's.</summary>
    private RpcException Finish(AsyncUnaryCall<TResponse> last, RpcException error)
    {
        _status = error.Status;

        // The manager sends headers before any error; a call that never reached one has none (empty, not an
        // exception nobody may observe: the error itself comes from the response).
        var headers = last.ResponseHeadersAsync;
        _responseHeaders.TrySetResult(headers.IsCompletedSuccessfully ? headers.Result : []);
        return error;
    }

    private Status GetStatus() =>
        _status ?? _last?.GetStatus() ?? throw new InvalidOperationException("The call has not finished yet: its status is known only then.");

    private Metadata GetTrailers() =>
        _last?.GetTrailers() ?? throw new InvalidOperationException("The call has not finished yet: its trailers are known only then.");

    private static string Seconds(TimeSpan time) => string.Create(CultureInfo.InvariantCulture, $"{time.TotalSeconds:0.###} s");

    /// <summary>
    /// Cancels the call if it is still running (a caller that gives up disposes it): the attempt in flight, or the wait
    /// before the next one. Releases the last attempt.
    /// </summary>
    public void Dispose()
    {
        _disposed = true;

        // Callers dispose every call once it has finished; only one still running has anything to cancel.
        if (!_finished && _retryWait is { } retryWait)
        {
            try
            {
                retryWait.Cancel();
            }
            catch (ObjectDisposedException)
            {
                // It finished meanwhile.
            }
        }

        _last?.Dispose();
    }
}
