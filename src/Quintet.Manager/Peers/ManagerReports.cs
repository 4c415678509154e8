using System.Diagnostics;
using Akka.Actor;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Manager.Configuration;
using Quintet.Manager.Internal;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Peers;

/// <summary>Collects the managers' own reports, asking all of them at once with one bound on the wait.</summary>
internal sealed partial class ManagerReports(
    ClusterNode node,
    ManagerIdentity identity,
    IOptions<ManagerOptions> options,
    IEnumerable<IManagerReportPart> parts,
    ILogger<ManagerReports> logger) : IHostedService
{
    private static readonly ManagerReportRequest Request = new();

    /// <summary>Starts answering other managers' requests once the actor system runs.</summary>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        Func<ManagerReport> report = CreateOwnReport;
        node.System.ActorOf(Props.Create(() => new ManagerReportActor(report)), ManagerReportActor.Name);
        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>This manager's report: who it is, and what the layers above add (readiness, packages).</summary>
    public ManagerReport CreateOwnReport()
    {
        var report = identity.CreateReport();
        foreach (var part in parts)
        {
            part.AddTo(report);
        }

        return report;
    }

    /// <summary>
    /// The reports of the given managers, keyed by address; a manager that does not answer within
    /// <see cref="ManagerOptions.ReportTimeout"/> is left out.
    /// </summary>
    public async Task<IReadOnlyDictionary<Address, ManagerReport>> CollectAsync(IEnumerable<Address> managers, CancellationToken cancellationToken)
    {
        var timeout = options.Value.ReportTimeout;
        using var activity = ManagerTelemetry.Source.StartActivity("CollectManagerReports");
        var self = node.SelfAddress;
        var asks = managers.Distinct().Select(async address =>
        {
            if (address == self)
            {
                return (address, CreateOwnReport());
            }

            var path = new RootActorPath(address) / "user" / ManagerReportActor.Name;
            try
            {
                var report = await node.System.ActorSelection(path).Ask<ManagerReport>(Request, timeout, cancellationToken);
                return (address, report);
            }
            catch (Exception ex) when (ex is AskTimeoutException or TaskCanceledException)
            {
                LogNoReport(logger, address, timeout.TotalMilliseconds);
                return (address, (ManagerReport?)null);
            }
        });

        var results = await Task.WhenAll(asks);
        activity?.SetTag("quintet.managers.asked", results.Length);
        activity?.SetTag("quintet.managers.answered", results.Count(r => r.Item2 is not null));
        return results.Where(r => r.Item2 is not null).ToDictionary(r => r.address, r => r.Item2!);
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Address} sent no report within {TimeoutMs} ms")]
    private static partial void LogNoReport(ILogger logger, Address address, double timeoutMs);
}

/// <summary>The manager's trace source.</summary>
internal static class ManagerTelemetry
{
    public static readonly ActivitySource Source = new(Quintet.Diagnostics.QuintetTelemetry.Manager);
}
