using Grpc.Core;
using Quintet.Manager.Internal;
using Quintet.Persistence;
using Quintet.Persistence.Replication;

namespace Quintet.Manager.Persistence.Replication;

/// <summary>
/// The receiving side of replication: other managers' writers seal streams and send writes to this manager's replica.
/// Every write of a request is queued at once, so the whole batch (and whatever else is queued) shares one commit.
/// </summary>
internal sealed class StoreReplicationService(IServiceProvider services) : StoreReplication.StoreReplicationBase
{
    public override async Task<SealResponse> Seal(SealRequest request, ServerCallContext context)
    {
        var replica = Replica();
        Check(request.Stream, request.Epoch);
        var reply = await replica.SealAsync(request.Stream, request.Epoch, context.CancellationToken);
        var response = new SealResponse
        {
            Sealed = reply.Sealed,
            Promised = reply.Copy.Promised,
            Synced = reply.Copy.Synced,
            LastPosition = reply.Copy.LastPosition,
            Version = reply.Copy.Version,
            Corrupt = reply.Copy.Corrupt ?? string.Empty,
            Replica = replica.Name,
        };
        response.Entries.AddRange(reply.Copy.Entries.Select(StoreWire.ToWire));
        return response;
    }

    public override async Task<ReplicateResponse> Replicate(ReplicateRequest request, ServerCallContext context)
    {
        var replica = Replica();
        var ops = new List<ReplicaOp>(request.Ops.Count);
        foreach (var op in request.Ops)
        {
            Check(op.Stream, op.Epoch);
            if (op.Entries.Any(e => e.Position <= 0 || e.Kind is not (0 or 1)))
            {
                throw new RpcException(new Status(StatusCode.InvalidArgument, $"Stream '{op.Stream}': an entry has a position below 1 or an unknown kind."));
            }

            try
            {
                ops.Add(StoreWire.FromWire(op));
            }
            catch (ArgumentException e)
            {
                throw new RpcException(new Status(StatusCode.InvalidArgument, e.Message));
            }
        }

        var results = await Task.WhenAll(ops.Select(op => Apply(replica, op, context.CancellationToken)));
        var response = new ReplicateResponse { Replica = replica.Name };
        response.Results.AddRange(results.Select(StoreWire.ToWire));
        return response;
    }

    private static async Task<OpResult> Apply(ReplicaStore replica, ReplicaOp op, CancellationToken cancellationToken)
    {
        try
        {
            return await replica.SubmitAsync(op, cancellationToken);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            return OpResult.Failure($"{e.GetType().Name}: {e.Message}");
        }
    }

    private ReplicaStore Replica() => services.GetService<ReplicaStore>()
        ?? throw new RpcException(new Status(StatusCode.FailedPrecondition, "This manager does not keep a replica: its Quintet:Store:Kind is not 'replicated'. Every manager of a cluster must use the same store kind."));

    private static void Check(string stream, long epoch)
    {
        if (string.IsNullOrEmpty(stream) || stream.Length > LocalCheckpointStore.MaxStreamLength || epoch <= 0)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"A store request needs a stream name of 1 to {LocalCheckpointStore.MaxStreamLength} characters and an epoch above 0."));
        }
    }
}
