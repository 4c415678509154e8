using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Readiness;

/// <summary>Puts this manager's readiness in its report, so that any manager can say which of the others serve.</summary>
internal sealed class ReadinessReportPart(ManagerReadiness readiness) : IManagerReportPart
{
    public void AddTo(ManagerReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        var verdict = readiness.Current;
        report.Ready = verdict.IsReady;
        report.Readiness = verdict.IsReady ? "ready" : verdict.Reason;
    }
}
