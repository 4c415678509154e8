using System.Collections.Concurrent;
using Grpc.Net.Client;

namespace Quintet.Manager.Peers;

/// <summary>
/// The gRPC channels from this manager to the other managers' internal services: one HTTP/2 channel per manager
/// endpoint, reused by every caller (forwarded component calls, instance transfer, backups, store replication, package
/// distribution), so that each pair of managers shares one connection and how managers reach each other is set here.
/// </summary>
internal sealed class PeerChannels : IDisposable
{
    /// <summary>
    /// The largest message between managers, either way: an instance moved with its state and stream, a primary's state
    /// for its backups, a replicated stream's copy, or a package. The internal services take up to this.
    /// </summary>
    public const int MaxMessageBytes = 80 * 1024 * 1024;

    private readonly ConcurrentDictionary<string, GrpcChannel> _channels = new(StringComparer.Ordinal);

    /// <summary>The channel to the manager whose gRPC endpoint is <paramref name="endpoint"/>, created on first use.</summary>
    public GrpcChannel For(string endpoint) =>
        _channels.GetOrAdd(endpoint, e => GrpcChannel.ForAddress(e, new GrpcChannelOptions { MaxReceiveMessageSize = MaxMessageBytes, MaxSendMessageSize = MaxMessageBytes }));

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var channel in _channels.Values)
        {
            channel.Dispose();
        }

        _channels.Clear();
    }
}
