using Grpc.Core;
using Quintet.Manager.Ownership;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Admin;

/// <summary>
/// Which manager an admin request that names one (<c>manager</c>, a node name) is for: this one, or another that it is
/// passed on to, over the managers' own channels (a manager's certificate opens every method there, once the first
/// manager has checked the caller).
/// </summary>
internal sealed class ManagerTargets(ManagerIdentity identity, InstanceDirectory directory, PeerChannels channels)
{
    /// <summary>The bound on a request passed on to another manager.</summary>
    public static readonly TimeSpan ForwardTimeout = TimeSpan.FromSeconds(10);

    /// <summary>Null when the request is for this manager; otherwise the channel to the one named.</summary>
    /// <exception cref="RpcException">NOT_FOUND for a name no manager of the directory's view has, listing those it has.</exception>
    public ChannelBase? ChannelFor(string manager)
    {
        if (manager.Length == 0 || manager == identity.NodeName)
        {
            return null;
        }

        var peers = directory.Peers();
        foreach (var (node, endpoint) in peers)
        {
            if (node == manager && endpoint.Length > 0)
            {
                return channels.For(endpoint);
            }
        }

        var known = peers.Select(p => p.NodeName).Append(identity.NodeName).Distinct().Order(StringComparer.Ordinal);
        throw new RpcException(new Status(StatusCode.NotFound, $"No manager named '{manager}' is in the cluster as {identity.NodeName} sees it (known: {string.Join(", ", known)}); 'quintet cluster show' lists the managers' names."));
    }

    /// <summary>The deadline of a request passed on: the caller's, or <see cref="ForwardTimeout"/> if sooner.</summary>
    public static DateTime Deadline(ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var bound = DateTime.UtcNow + ForwardTimeout;
        return context.Deadline < bound ? context.Deadline : bound;
    }
}
