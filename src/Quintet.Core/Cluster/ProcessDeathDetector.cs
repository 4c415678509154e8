using System.Net;
using System.Net.NetworkInformation;
using Akka.Actor;
using Akka.Cluster;
using Akka.Remote;
using Microsoft.Extensions.Logging;

namespace Quintet.Core.Cluster;

/// <summary>
/// The first level of failure detection: certain evidence that a manager's process is gone, acted on at once. A crashed
/// process's kernel closes its connections and refuses new ones at its ports; a paused, slow or cut-off process does
/// neither (its kernel keeps its connections and completes new handshakes, or nothing answers at all). So when this
/// manager's group connection to an incarnation closed and a reconnect to its group port is actively refused, from an
/// address whose answer can be trusted (<see cref="ProcessDeathEvidence"/>), that incarnation is downed through the
/// cluster (quarantined and <see cref="Akka.Cluster.Cluster.Down"/>): the leader removes it within a few gossip rounds, and the groups
/// suspect it as soon as it is Down. Everything else (timeouts, a silent peer) is left to the heartbeats' phi-accrual
/// detector and the split-brain resolver, the second level.
/// </summary>
internal sealed partial class ProcessDeathDetector(Akka.Cluster.Cluster cluster, ProcessDeathEvidence trusted, ILogger logger)
{
    /// <summary>A refused reconnect to <paramref name="node"/>, <paramref name="uid"/> at <paramref name="endpoint"/>, after its connection closed.</summary>
    public void OnRefusedAfterClose(string node, long uid, IPEndPoint endpoint)
    {
        if (trusted == ProcessDeathEvidence.Off)
        {
            return;
        }

        if (!Trusts(trusted, endpoint.Address))
        {
            LogNotTrusted(logger, node, uid, endpoint.ToString());
            return;
        }

        var member = cluster.State.Members.FirstOrDefault(m => m.UniqueAddress.Uid == uid && m.Address.ToString() == node);

        // Only a member that should be listening: one that is leaving closes its ports on purpose, and one already Down or
        // Removed needs nothing more.
        if (member is null || member.Status is not (MemberStatus.Up or MemberStatus.WeaklyUp or MemberStatus.Joining)
            || member.UniqueAddress == cluster.SelfUniqueAddress)
        {
            return;
        }

        LogDowning(logger, node, uid, endpoint.ToString());

        // Down alone is not enough: the leader removes a Down member only once it is also unreachable, which the
        // heartbeats would take seconds to say. Quarantining the incarnation is this manager's own observation that it
        // is gone for good (Akka.NET marks a quarantined member terminated, and unreachable, in the gossip; the removal
        // would quarantine it anyway), and it is the incarnation's uid that is quarantined, never the address: a
        // manager restarted there is a new uid. Down takes an address; the check above makes sure it is still this
        // incarnation's (a new one at the same address can only join once this one is gone from the membership).
        ((IRemoteActorRefProvider)((ExtendedActorSystem)cluster.System).Provider).Quarantine(member.Address, member.UniqueAddress.Uid);

        // Before the Down, so that the groups know why their member is suspected: its lease died with its process.
        cluster.System.EventStream.Publish(new ProcessDeathObserved(node, uid));
        cluster.Down(member.Address);
    }

    /// <summary>Whether a refusal from <paramref name="address"/> is evidence under <paramref name="trusted"/>.</summary>
    internal static bool Trusts(ProcessDeathEvidence trusted, IPAddress address) => trusted switch
    {
        ProcessDeathEvidence.AnyHost => true,
        ProcessDeathEvidence.SameHost => IsThisHost(address),
        _ => false,
    };

    private static bool IsThisHost(IPAddress address)
    {
        if (IPAddress.IsLoopback(address))
        {
            return true;
        }

        try
        {
            return NetworkInterface.GetAllNetworkInterfaces()
                .Where(i => i.OperationalStatus == OperationalStatus.Up)
                .SelectMany(i => i.GetIPProperties().UnicastAddresses)
                .Any(a => a.Address.Equals(address));
        }
        catch (NetworkInformationException)
        {
            return false;
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Manager {Node} (uid {Uid}) closed its group connection and its group port {Endpoint} refuses connections on this host: its process is gone; downing it without waiting for the heartbeats")]
    private static partial void LogDowning(ILogger logger, string node, long uid, string endpoint);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Node} (uid {Uid}) refused a reconnect at {Endpoint}, another host: not trusted as evidence of its death (ProcessDeathEvidence is SameHost); the heartbeats decide")]
    private static partial void LogNotTrusted(ILogger logger, string node, long uid, string endpoint);
}

/// <summary>
/// Published on the actor system's event stream when <see cref="ProcessDeathDetector"/> has certain evidence that the
/// manager incarnation <paramref name="Node"/>, <paramref name="Uid"/> no longer runs.
/// </summary>
internal sealed record ProcessDeathObserved(string Node, long Uid);
