using Quintet.Protocol.Admin;

namespace Quintet.Manager.Peers;

/// <summary>
/// What a layer above <c>Peers</c> adds to this manager's report (its readiness, its packages): that layer implements
/// it, so that the report needs no arrow up to it.
/// </summary>
internal interface IManagerReportPart
{
    /// <summary>Fills the part's fields of <paramref name="report"/>; called when a report is asked for, never otherwise.</summary>
    void AddTo(ManagerReport report);
}
