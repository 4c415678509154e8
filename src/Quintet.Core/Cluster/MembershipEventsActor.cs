using Akka.Actor;
using Akka.Cluster;
using Microsoft.Extensions.Logging;
using Quintet.Core.Diagnostics;

namespace Quintet.Core.Cluster;

/// <summary>Logs and counts the membership changes this manager observes.</summary>
internal sealed partial class MembershipEventsActor : ReceiveActor
{
    private readonly ILogger _logger;

    public MembershipEventsActor(ILogger logger)
    {
        _logger = logger;
        Receive<ClusterEvent.IMemberEvent>(OnMemberEvent);
        Receive<ClusterEvent.UnreachableMember>(e =>
        {
            ClusterMetrics.CountEvent("unreachable");
            LogUnreachable(_logger, e.Member.Address, e.Member.UniqueAddress.Uid);
        });
        Receive<ClusterEvent.ReachableMember>(e =>
        {
            ClusterMetrics.CountEvent("reachable");
            LogReachable(_logger, e.Member.Address);
        });
        Receive<ClusterEvent.CurrentClusterState>(_ => { });
    }

    protected override void PreStart() =>
        Akka.Cluster.Cluster.Get(Context.System).Subscribe(
            Self,
            ClusterEvent.SubscriptionInitialStateMode.InitialStateAsSnapshot,
            typeof(ClusterEvent.IMemberEvent),
            typeof(ClusterEvent.IReachabilityEvent));

    protected override void PostStop() => Akka.Cluster.Cluster.Get(Context.System).Unsubscribe(Self);

    private void OnMemberEvent(ClusterEvent.IMemberEvent e)
    {
        var kind = e switch
        {
            ClusterEvent.MemberJoined => "joined",
            ClusterEvent.MemberUp => "up",
            ClusterEvent.MemberWeaklyUp => "weakly-up",
            ClusterEvent.MemberLeft => "left",
            ClusterEvent.MemberExited => "exited",
            ClusterEvent.MemberDowned => "downed",
            ClusterEvent.MemberRemoved => "removed",
            _ => "other",
        };
        ClusterMetrics.CountEvent(kind);
        LogMemberEvent(_logger, e.Member.Address, e.Member.UniqueAddress.Uid, kind);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Manager {Address} (uid {Uid}) {Event}")]
    private static partial void LogMemberEvent(ILogger logger, Address address, long uid, string @event);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Manager {Address} (uid {Uid}) is unreachable")]
    private static partial void LogUnreachable(ILogger logger, Address address, long uid);

    [LoggerMessage(Level = LogLevel.Information, Message = "Manager {Address} is reachable again")]
    private static partial void LogReachable(ILogger logger, Address address);
}
