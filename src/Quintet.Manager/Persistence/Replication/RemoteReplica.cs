using System.Threading.Channels;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Manager.Internal;
using Quintet.Persistence.Replication;

namespace Quintet.Manager.Persistence.Replication;

/// <summary>
/// Another manager's replica, reached over gRPC. Writes for it queue here and go in batches, one call in flight at a time:
/// what queues while a call is out goes in the next one, so a busy stream costs a call per batch, not per write, and each
/// replica takes the writes in the order they were made.
/// </summary>
internal sealed class RemoteReplica : IStoreReplica, IDisposable
{
    private const int MaxBatchOperations = 512;
    private const long MaxBatchBytes = 16L * 1024 * 1024;

    private readonly Channel<Pending> _queue = Channel.CreateUnbounded<Pending>(new UnboundedChannelOptions { SingleReader = true });
    private readonly StoreReplication.StoreReplicationClient _client;
    private readonly string _writer;
    private readonly TimeSpan _timeout;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Task _loop;
    private string? _lastFailure;

    public RemoteReplica(string name, string endpoint, GrpcChannel channel, string writer, TimeSpan timeout)
    {
        Name = name;
        Endpoint = endpoint;
        _client = new StoreReplication.StoreReplicationClient(channel);
        _writer = writer;
        _timeout = timeout;
        _loop = Task.Run(SendLoopAsync);
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <summary>The manager's gRPC endpoint.</summary>
    public string Endpoint { get; }

    /// <summary>Why the last call to the replica failed, with its time; null once a call succeeds (or before any fails).</summary>
    public string? LastFailure => Volatile.Read(ref _lastFailure);

    /// <inheritdoc />
    public async Task<SealReply> SealAsync(string stream, long epoch, CancellationToken cancellationToken)
    {
        var reply = await _client.SealAsync(
            new SealRequest { Stream = stream, Epoch = epoch, Writer = _writer },
            deadline: DateTime.UtcNow + _timeout,
            cancellationToken: cancellationToken);
        var copy = new ReplicaCopy(reply.Promised, reply.Synced, reply.LastPosition, reply.Version, [.. reply.Entries.Select(StoreWire.FromWire)], string.IsNullOrEmpty(reply.Corrupt) ? null : reply.Corrupt);
        return new SealReply(Name, reply.Sealed, copy);
    }

    /// <inheritdoc />
    public Task<OpResult> SubmitAsync(ReplicaOp op, CancellationToken cancellationToken)
    {
        var pending = new Pending(op, cancellationToken);
        if (!_queue.Writer.TryWrite(pending))
        {
            return Task.FromResult(OpResult.Failure("this manager is stopping"));
        }

        return pending.Completion.Task;
    }

    public void Dispose()
    {
        _queue.Writer.TryComplete();
        _stopping.Cancel();
        _stopping.Dispose();
    }

    private async Task SendLoopAsync()
    {
        var batch = new List<Pending>();
        try
        {
            while (await _queue.Reader.WaitToReadAsync(_stopping.Token))
            {
                // A batch grows while it stays under its size, so that a large operation goes alone and every message
                // fits the replicas' limit (StoreWire.MaxMessageBytes).
                long bytes = 0;
                while (batch.Count < MaxBatchOperations
                    && _queue.Reader.TryPeek(out var peeked)
                    && (batch.Count == 0 || bytes + peeked.Op.Bytes <= MaxBatchBytes)
                    && _queue.Reader.TryRead(out var next))
                {
                    // A write whose writer gave up waiting is not sent: the writer counted it as not durable here.
                    if (next.CancellationToken.IsCancellationRequested)
                    {
                        next.Completion.TrySetResult(OpResult.Failure("no answer in time"));
                        continue;
                    }

                    batch.Add(next);
                    bytes += next.Op.Bytes;
                }

                if (batch.Count > 0)
                {
                    await SendAsync(batch);
                    batch.Clear();
                }
            }
        }
        catch (OperationCanceledException) when (_stopping.IsCancellationRequested)
        {
            // Stopping.
        }

        foreach (var left in batch)
        {
            left.Completion.TrySetResult(OpResult.Failure("this manager is stopping"));
        }

        while (_queue.Reader.TryRead(out var left))
        {
            left.Completion.TrySetResult(OpResult.Failure("this manager is stopping"));
        }
    }

    private async Task SendAsync(List<Pending> batch)
    {
        var request = new ReplicateRequest { Writer = _writer };
        request.Ops.AddRange(batch.Select(p => StoreWire.ToWire(p.Op)));
        try
        {
            var response = await _client.ReplicateAsync(request, deadline: DateTime.UtcNow + _timeout, cancellationToken: _stopping.Token);
            Volatile.Write(ref _lastFailure, null);
            for (var i = 0; i < batch.Count; i++)
            {
                batch[i].Completion.TrySetResult(i < response.Results.Count ? StoreWire.FromWire(response.Results[i]) : OpResult.Failure("the replica answered fewer results than writes"));
            }
        }
        catch (RpcException e)
        {
            Volatile.Write(ref _lastFailure, $"a write failed at {DateTime.UtcNow:HH:mm:ss} UTC ({e.StatusCode}: {e.Status.Detail})");
            foreach (var pending in batch)
            {
                pending.Completion.TrySetResult(OpResult.Failure($"{e.StatusCode}: {e.Status.Detail}"));
            }
        }
    }

    private sealed class Pending(ReplicaOp op, CancellationToken cancellationToken)
    {
        public ReplicaOp Op { get; } = op;

        public CancellationToken CancellationToken { get; } = cancellationToken;

        public TaskCompletionSource<OpResult> Completion { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
