using System.Diagnostics;
using Akka.Actor;
using Akka.Cluster;
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
    private static readonly TimeSpan GoneCheckInterval = TimeSpan.FromMilliseconds(50);

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
                var ask = node.System.ActorSelection(path).Ask<ManagerReport>(Request, timeout, cancellationToken);
                return (address, await AnswerUnlessGoneAsync(ask, address, cancellationToken));
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

    // A manager whose process died is downed within a few hundred milliseconds (the process-death detector), one cut
    // off or paused turns unreachable: its report is then given up on at once rather than at the timeout, so that a
    // tree or a list of managers read just after a crash (by a console that has just moved away from the dead manager)
    // does not wait for it. Membership changes come as cluster events to actors only; a check of the cluster's read
    // view every few tens of milliseconds, while an ask is out, is cheaper than an actor per collection.
    private async Task<ManagerReport?> AnswerUnlessGoneAsync(Task<ManagerReport> ask, Address address, CancellationToken cancellationToken)
    {
        while (true)
        {
            var finished = await Task.WhenAny(ask, Task.Delay(GoneCheckInterval, cancellationToken));
            if (finished == ask)
            {
                return await ask;
            }

            cancellationToken.ThrowIfCancellationRequested();
            if (IsGone(address))
            {
                // The ask still ends at its timeout: its failure is expected and observed here.
                _ = ask.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
                LogGone(logger, address);
                return null;
            }
        }
    }

    private bool IsGone(Address address)
    {
        var state = node.Cluster.State;
        var member = state.Members.FirstOrDefault(m => m.Address == address);
        return member is null || member.Status is MemberStatus.Down or MemberStatus.Removed || state.Unreachable.Any(m => m.Address == address);
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Address} is down or unreachable: its report is not waited for")]
    private static partial void LogGone(ILogger logger, Address address);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Manager {Address} sent no report within {TimeoutMs} ms")]
    private static partial void LogNoReport(ILogger logger, Address address, double timeoutMs);
}

/// <summary>The manager's trace source.</summary>
internal static class ManagerTelemetry
{
    public static readonly ActivitySource Source = new(Quintet.Diagnostics.QuintetTelemetry.Manager);
}
