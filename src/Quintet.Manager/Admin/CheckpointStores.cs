using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence;
using Quintet.Persistence;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Admin;

/// <summary>
/// The checkpoint stores of <c>ListCheckpointStores</c>: this manager's own, as the store describes itself
/// (<see cref="IDescribedCheckpointStore"/>), and, for the whole cluster, every other manager of the instance
/// directory's view asked for its own at once, each with one bound; a manager that does not answer in time is listed as
/// unreachable instead of failing the call.
/// </summary>
internal sealed partial class CheckpointStores(
    ICheckpointStore store,
    StoreChoice choice,
    ManagerTargets targets,
    InstanceDirectory directory,
    PeerChannels channels,
    ManagerIdentity identity,
    ILogger<CheckpointStores> logger)
{
    /// <summary>
    /// How long a store may take to describe itself: a store on a server asks it. Under the bound of a request passed
    /// on (<see cref="ManagerTargets.ForwardTimeout"/>), so that a slow store is shown unhealthy, not its manager unreachable.
    /// </summary>
    public static readonly TimeSpan DescribeTimeout = TimeSpan.FromSeconds(5);

    /// <summary>The stores the request asks for.</summary>
    /// <exception cref="RpcException">NOT_FOUND for a manager the cluster does not have.</exception>
    public async Task<ListCheckpointStoresResponse> ListAsync(ListCheckpointStoresRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var response = new ListCheckpointStoresResponse();
        if (request.Manager.Length > 0)
        {
            if (targets.ChannelFor(request.Manager) is { } channel)
            {
                await AskAsync(request.Manager, channel, ManagerTargets.Deadline(context), response, context.CancellationToken);
            }
            else
            {
                response.Stores.Add(await DescribeOwnAsync(context.CancellationToken));
            }

            return response;
        }

        var deadline = ManagerTargets.Deadline(context);
        var others = directory.Peers().Where(p => p.NodeName != identity.NodeName && p.Endpoint.Length > 0).ToList();
        var answers = others.Select(p =>
        {
            var one = new ListCheckpointStoresResponse();
            return (Task: AskAsync(p.NodeName, channels.For(p.Endpoint), deadline, one, context.CancellationToken), Answer: one);
        }).ToList();
        response.Stores.Add(await DescribeOwnAsync(context.CancellationToken));
        await Task.WhenAll(answers.Select(a => a.Task));
        foreach (var (_, answer) in answers)
        {
            response.Stores.Add(answer.Stores);
            response.Unreachable.Add(answer.Unreachable);
        }

        var stores = response.Stores.OrderBy(s => s.Manager, StringComparer.Ordinal).ToList();
        var unreachable = response.Unreachable.Order(StringComparer.Ordinal).ToList();
        response.Stores.Clear();
        response.Stores.AddRange(stores);
        response.Unreachable.Clear();
        response.Unreachable.AddRange(unreachable);
        return response;
    }

    /// <summary>This manager's store, as it describes itself within <see cref="DescribeTimeout"/>.</summary>
    public async Task<CheckpointStoreInfo> DescribeOwnAsync(CancellationToken cancellationToken)
    {
        var info = new CheckpointStoreInfo { Manager = identity.NodeName, Kind = choice.Kind.Name, Healthy = true };
        if (store is not IDescribedCheckpointStore described)
        {
            info.Details.Add(new CheckpointStoreDetail { Name = "description", Value = $"the {choice.Kind.Name} store does not describe itself" });
            return info;
        }

        using var bound = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bound.CancelAfter(DescribeTimeout);
        CheckpointStoreDescription description;
        try
        {
            description = await described.DescribeAsync(bound.Token);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            info.Healthy = false;
            info.Problem = $"The {choice.Kind.Name} checkpoint store of {identity.NodeName} did not describe itself within {DescribeTimeout.TotalSeconds:F0} s; it may be overloaded or its server slow. Retry, and see the manager's log ('quintet cluster log').";
            return info;
        }

        info.Kind = description.Kind;
        info.Location = description.Location;
        if (description.Streams is { } streams)
        {
            info.Streams = streams;
        }

        if (description.LiveBytes is { } live)
        {
            info.LiveBytes = live;
        }

        if (description.StoredBytes is { } stored)
        {
            info.StoredBytes = stored;
        }

        if (description.LastWrite is { } lastWrite)
        {
            info.LastWrite = Timestamp.FromDateTimeOffset(lastWrite);
        }

        info.Healthy = description.Healthy;
        info.Problem = description.Problem ?? string.Empty;
        info.Writes = description.Writes;
        info.Commits = description.Commits;
        info.Details.AddRange(description.Details.Select(d => new CheckpointStoreDetail { Name = d.Key, Value = d.Value }));
        return info;
    }

    /// <summary>Asks another manager for its own store; one that does not answer (in time) goes to <c>unreachable</c>.</summary>
    private async Task AskAsync(string manager, ChannelBase channel, DateTime deadline, ListCheckpointStoresResponse into, CancellationToken cancellationToken)
    {
        try
        {
            var answer = await new ClusterAdmin.ClusterAdminClient(channel).ListCheckpointStoresAsync(
                new ListCheckpointStoresRequest { Manager = manager }, deadline: deadline, cancellationToken: cancellationToken);
            into.Stores.Add(answer.Stores);
            into.Unreachable.Add(answer.Unreachable);
        }
        catch (RpcException e) when (!cancellationToken.IsCancellationRequested)
        {
            LogNoAnswer(logger, manager, e.StatusCode, e.Status.Detail);
            into.Unreachable.Add(manager);
        }
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Manager} did not describe its checkpoint store: {Code}: {Detail}")]
    private static partial void LogNoAnswer(ILogger logger, string manager, StatusCode code, string detail);
}
