using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Packages;

/// <summary>Puts the packages deployed here in this manager's report: a manager that lacks one shows it.</summary>
internal sealed class PackagesReportPart(DeployedPackages deployed) : IManagerReportPart
{
    public void AddTo(ManagerReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        report.Packages.AddRange(deployed.All.Select(p => $"{p.Name}@{p.Version}").Order(StringComparer.Ordinal));
    }
}
