using Akka.Actor;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Peers;

/// <summary>Answers other managers that ask this one for its <see cref="Protocol.Admin.ManagerReport"/>.</summary>
internal sealed class ManagerReportActor : ReceiveActor
{
    /// <summary>The actor's name under <c>/user</c>, the same on every manager.</summary>
    public const string Name = "quintet-manager-report";

    public ManagerReportActor(Func<Protocol.Admin.ManagerReport> report) =>
        Receive<ManagerReportRequest>(_ => Sender.Tell(report()));
}
