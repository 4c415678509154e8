using System.Threading.Channels;
using Grpc.Core;
using Quintet.Core.Cluster;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// <c>WatchInvocations</c>: the manager asked subscribes to its own <see cref="InvocationFeed"/> and, through the same
/// RPC marked this-manager-only, to every other manager's, and merges them into one stream; an instance's owner may be
/// any manager and may change. Managers that join later are subscribed to at the next look at the directory's view;
/// a manager that leaves ends its part alone. The merged stream is bounded as each manager's is: a slow watcher loses
/// the oldest events, counted in the next event's <c>dropped</c>.
/// </summary>
internal sealed partial class InvocationWatch(
    InvocationFeed feed,
    DeployedPackages deployed,
    InstanceDirectory directory,
    PeerChannels channels,
    ManagerIdentity identity,
    ClusterNode node,
    TimeProvider time,
    ILogger<InvocationWatch> logger)
{
    /// <summary>The cap a request that sets none gets.</summary>
    public const int DefaultMaxPerSecond = 200;

    /// <summary>The largest cap a request may ask for.</summary>
    public const int MaxMaxPerSecond = 10_000;

    /// <summary>How often the managers of the view are looked at again, to subscribe to those that joined (or came back).</summary>
    public static readonly TimeSpan PeerRefresh = TimeSpan.FromSeconds(2);

    /// <summary>How long the stream waits for the managers there at its start to subscribe before it answers its headers.</summary>
    public static readonly TimeSpan SubscribeBound = TimeSpan.FromSeconds(5);

    /// <summary>The cap a request asks for.</summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT out of bounds.</exception>
    public static int MaxPerSecondOf(WatchInvocationsRequest request)
    {
        ArgumentNullException.ThrowIfNull(request);
        return request.MaxPerSecond switch
        {
            0 => DefaultMaxPerSecond,
            > 0 and <= MaxMaxPerSecond => request.MaxPerSecond,
            _ => throw new RpcException(new Status(StatusCode.InvalidArgument, $"max_per_second {request.MaxPerSecond} is out of range: 0 (the default, {DefaultMaxPerSecond}) or from 1 to {MaxMaxPerSecond}.")),
        };
    }

    /// <summary>Writes the invocations as they come until the caller goes away.</summary>
    public async Task WatchAsync(WatchInvocationsRequest request, IServerStreamWriter<InvocationEvent> stream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(stream);
        ArgumentNullException.ThrowIfNull(context);
        var cap = MaxPerSecondOf(request);
        if (request.ClassName.Length == 0)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "class_name is required: the class whose invocations to watch ('quintet component list' shows the deployed ones)."));
        }

        var componentClass = deployed.FindClass(request.ClassName)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{request.ClassName}'; 'quintet component list' shows the deployed ones."));
        if (!componentClass.Qos.Debug)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, $"Debug is off for {componentClass.Name}: managers record its invocations only with debug: true in its QoS spec. Turn it on with 'quintet qos get {componentClass.Name}', adding debug: true, and 'quintet qos set {componentClass.Name} <file>' (or in the package's QoS file)."));
        }

        if (request.ThisManagerOnly)
        {
            await WatchHereAsync(request, cap, stream, context);
            return;
        }

        try
        {
            _ = node.Snapshot();
        }
        catch (InvalidOperationException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, "This manager has not started its cluster membership yet; retry in a moment."));
        }

        await WatchClusterAsync(request, cap, stream, context);
    }

    /// <summary>This manager's part: its feed, answered headers once subscribed.</summary>
    private async Task WatchHereAsync(WatchInvocationsRequest request, int cap, IServerStreamWriter<InvocationEvent> stream, ServerCallContext context)
    {
        using var subscription = feed.Subscribe(request.ClassName, request.Key, cap);
        await context.WriteResponseHeadersAsync([]);
        try
        {
            await foreach (var (record, dropped) in subscription.ReadAllAsync(context.CancellationToken))
            {
                await stream.WriteAsync(ToEvent(record, dropped), context.CancellationToken);
            }
        }
        catch (OperationCanceledException) when (context.CancellationToken.IsCancellationRequested)
        {
            // The watcher went away: that is how a watch ends.
        }
    }

    private async Task WatchClusterAsync(WatchInvocationsRequest request, int cap, IServerStreamWriter<InvocationEvent> stream, ServerCallContext context)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(context.CancellationToken);
        var merge = new MergedInvocations();
        var forward = request.Clone();
        forward.ThisManagerOnly = true;
        var parts = new Dictionary<string, Task>(StringComparer.Ordinal);
        using var local = feed.Subscribe(request.ClassName, request.Key, cap);
        parts[identity.NodeName] = PumpLocalAsync(local, merge, stop.Token);

        var subscribed = StartPeers(forward, parts, merge, stop.Token);
        try
        {
            await Task.WhenAll(subscribed).WaitAsync(SubscribeBound, time, stop.Token);
        }
        catch (TimeoutException)
        {
            // A manager slow to subscribe joins the stream when it does; the others need not wait for it.
        }

        await context.WriteResponseHeadersAsync([]);
        var refresh = RefreshPeersAsync(forward, parts, merge, stop.Token);
        var rate = new RateGate(cap, time);
        try
        {
            await foreach (var message in merge.Reader.ReadAllAsync(stop.Token))
            {
                if (!rate.TryTake())
                {
                    merge.CountDropped(1 + message.Dropped);
                    continue;
                }

                message.Dropped += merge.TakeDropped();
                await stream.WriteAsync(message, stop.Token);
            }
        }
        catch (OperationCanceledException) when (context.CancellationToken.IsCancellationRequested)
        {
            // The watcher went away: that is how a watch ends.
        }
        finally
        {
            await stop.CancelAsync();
            lock (parts)
            {
                subscribed = [.. parts.Values];
            }

            await Task.WhenAll(subscribed.Append(refresh)).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }
    }

    /// <summary>Subscribes to the managers of the view that have no running part; returns when each subscribed (or failed).</summary>
    private List<Task> StartPeers(WatchInvocationsRequest forward, Dictionary<string, Task> parts, MergedInvocations merge, CancellationToken cancellationToken)
    {
        var subscribed = new List<Task>();
        foreach (var (name, endpoint) in directory.Peers())
        {
            if (name == identity.NodeName || endpoint.Length == 0)
            {
                continue;
            }

            lock (parts)
            {
                if (parts.TryGetValue(name, out var running) && !running.IsCompleted)
                {
                    continue;
                }

                var headers = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                parts[name] = PumpPeerAsync(name, endpoint, forward, merge, headers, cancellationToken);
                subscribed.Add(headers.Task);
            }
        }

        return subscribed;
    }

    private async Task RefreshPeersAsync(WatchInvocationsRequest forward, Dictionary<string, Task> parts, MergedInvocations merge, CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(PeerRefresh, time);
        try
        {
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                StartPeers(forward, parts, merge, cancellationToken);
            }
        }
        catch (OperationCanceledException)
        {
            // The watch ended.
        }
    }

    private async Task PumpLocalAsync(InvocationSubscription subscription, MergedInvocations merge, CancellationToken cancellationToken)
    {
        try
        {
            await foreach (var (record, dropped) in subscription.ReadAllAsync(cancellationToken))
            {
                merge.Write(ToEvent(record, dropped));
            }
        }
        catch (OperationCanceledException)
        {
            // The watch ended.
        }
    }

    /// <summary>One other manager's part, until it fails or leaves (then the next refresh may start it again) or the watch ends.</summary>
    private async Task PumpPeerAsync(string name, string endpoint, WatchInvocationsRequest forward, MergedInvocations merge, TaskCompletionSource subscribed, CancellationToken cancellationToken)
    {
        // Off the caller's thread: the refresh starts several at once.
        await Task.Yield();
        try
        {
            using var call = new ComponentAdmin.ComponentAdminClient(channels.For(endpoint)).WatchInvocations(forward, cancellationToken: cancellationToken);
            await call.ResponseHeadersAsync;
            subscribed.TrySetResult();
            while (await call.ResponseStream.MoveNext(cancellationToken))
            {
                merge.Write(call.ResponseStream.Current);
            }
        }
        catch (RpcException e) when (!cancellationToken.IsCancellationRequested)
        {
            LogPeerPartEnded(name, e.StatusCode, e.Status.Detail);
        }
        catch (Exception e) when (e is OperationCanceledException or RpcException)
        {
            // The watch ended.
        }
        finally
        {
            subscribed.TrySetResult();
        }
    }

    private InvocationEvent ToEvent(FeedRecord record, long dropped) => new()
    {
        Manager = identity.NodeName,
        ClassName = record.ClassName,
        Key = record.Key,
        Record = InstanceListing.ToRecord(record.Trace),
        Dropped = dropped,
    };

    [LoggerMessage(Level = LogLevel.Debug, Message = "A watch of invocations lost manager {Manager}'s part ({Code}: {Detail}); it subscribes again while the manager is in the view")]
    private partial void LogPeerPartEnded(string manager, StatusCode code, string detail);
}

/// <summary>
/// The events of every manager's part of a watch, bounded: the oldest are dropped when the watcher is slow, and
/// counted with the drops they carried, for the next event written.
/// </summary>
internal sealed class MergedInvocations
{
    private readonly Channel<InvocationEvent> _events;
    private long _dropped;

    public MergedInvocations() => _events = Channel.CreateBounded<InvocationEvent>(
        new BoundedChannelOptions(InvocationFeed.Capacity) { FullMode = BoundedChannelFullMode.DropOldest, SingleReader = true },
        dropped => Interlocked.Add(ref _dropped, 1 + dropped.Dropped));

    public ChannelReader<InvocationEvent> Reader => _events.Reader;

    public void Write(InvocationEvent message) => _events.Writer.TryWrite(message);

    public void CountDropped(long count) => Interlocked.Add(ref _dropped, count);

    public long TakeDropped() => Interlocked.Exchange(ref _dropped, 0);
}
