using System.Diagnostics;
using Akka.Actor;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Internal;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Packages;

/// <summary>
/// Keeps every manager's packages the same: a deploy or undeploy on one manager is told to the others in total order
/// through the light group <c>quintet.packages</c>, and each fetches the zip from the manager that has it. A manager
/// joining the group first joins, then copies what a member already has: what is deployed after its join reaches it
/// through the group, what was deployed before is in that member's list.
/// </summary>
internal sealed partial class PackageReplicator(
    GroupService groups,
    IPackageDeployer deployer,
    DeployedPackages packages,
    ManagerReports reports,
    ManagerIdentity identity,
    PeerChannels channels,
    ILogger<PackageReplicator> logger) : BackgroundService
{
    /// <summary>The light group every manager joins to hear of deploys and undeploys.</summary>
    public const string GroupName = "quintet.packages";

    private static readonly TimeSpan JoinWait = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan FetchDeadline = TimeSpan.FromSeconds(60);

    // A manager restarted during a rolling restart may find the peer it asks still listed but stopping, or not yet
    // reporting: it asks the others, and again a little later, rather than serve without the cluster's packages.
    private static readonly TimeSpan CopyWait = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan CopyRetryInterval = TimeSpan.FromSeconds(1);
    private readonly TaskCompletionSource<LightGroupMember> _member = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Tells every manager that <paramref name="package"/> was deployed here.</summary>
    public Task AnnounceDeployedAsync(ComponentPackage package, CancellationToken cancellationToken) =>
        AnnounceAsync(new PackageEvent { Deployed = new PackageDeployed { Name = package.Name, Version = package.Version, Sha256 = ByteString.CopyFrom(package.Sha256), Source = identity.GrpcEndpoint } }, cancellationToken);

    /// <summary>Tells every manager that package <paramref name="name"/> was undeployed.</summary>
    public Task AnnounceUndeployedAsync(string name, CancellationToken cancellationToken) =>
        AnnounceAsync(new PackageEvent { Undeployed = new PackageUndeployed { Name = name } }, cancellationToken);

    private async Task AnnounceAsync(PackageEvent packageEvent, CancellationToken cancellationToken)
    {
        LightGroupMember member;
        try
        {
            member = await _member.Task.WaitAsync(JoinWait, cancellationToken);
        }
        catch (TimeoutException)
        {
            throw new RpcException(new Grpc.Core.Status(StatusCode.Unavailable, $"Done on this manager, but it is not yet in the cluster's package group after {JoinWait.TotalSeconds:F0} s, so the other managers were not told; retry once it has joined."));
        }

        await member.MulticastAsync(packageEvent.ToByteArray(), MessageOrdering.Total, cancellationToken: cancellationToken);
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            var member = await groups.JoinLightGroupAsync(GroupName, cancellationToken: stoppingToken);
            _member.TrySetResult(member);
            try
            {
                await CopyFromPeerAsync(member, stoppingToken);
            }
            finally
            {
                packages.MarkCaughtUp();
            }

            await foreach (var groupEvent in member.Events.ReadAllAsync(stoppingToken))
            {
                if (groupEvent is LightMessageDelivered { Delivery: var delivery })
                {
                    await ApplyAsync(PackageEvent.Parser.ParseFrom(delivery.Payload.Span), stoppingToken);
                }
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    private async Task ApplyAsync(PackageEvent packageEvent, CancellationToken cancellationToken)
    {
        switch (packageEvent.KindCase)
        {
            case PackageEvent.KindOneofCase.Deployed:
                var deployed = packageEvent.Deployed;
                var existing = packages.All.FirstOrDefault(p => p.Name == deployed.Name);
                if (existing is not null)
                {
                    if (!existing.Sha256.AsSpan().SequenceEqual(deployed.Sha256.Span))
                    {
                        LogConflict(logger, deployed.Name, deployed.Source);
                    }

                    return;
                }

                await FetchAndDeployAsync(deployed.Name, deployed.Source, cancellationToken);
                break;
            case PackageEvent.KindOneofCase.Undeployed:
                await deployer.UndeployAsync(packageEvent.Undeployed.Name, cancellationToken);
                break;
        }
    }

    /// <summary>
    /// Copies the packages a member of the group already has (its manager's list) that this manager lacks, from the
    /// first member that answers; members are asked in turn, again every second, for <see cref="CopyWait"/> at most.
    /// </summary>
    private async Task CopyFromPeerAsync(LightGroupMember member, CancellationToken cancellationToken)
    {
        var started = Stopwatch.StartNew();
        Exception? lastFailure = null;
        while (true)
        {
            // Not this manager's former incarnation either, still in the view after a restart at the same address: its
            // address now answers as this manager, whose own list is empty, and copying nothing would be caught up.
            var peers = member.View?.Members.Select(m => m.Id.Host).Where(h => h.Node != member.Self.Host.Node).Distinct().ToList() ?? [];
            if (peers.Count == 0)
            {
                return;
            }

            foreach (var peer in peers)
            {
                var address = Address.Parse(peer.Node);
                var endpoint = (await reports.CollectAsync([address], cancellationToken)).GetValueOrDefault(address)?.GrpcEndpoint;
                if (endpoint is null || endpoint == identity.GrpcEndpoint)
                {
                    LogNoPeer(logger, peer.Node);
                    continue;
                }

                try
                {
                    var list = await new PackageDistribution.PackageDistributionClient(channels.For(endpoint)).ListDeployedAsync(new ListDeployedRequest(), deadline: DateTime.UtcNow + FetchDeadline, cancellationToken: cancellationToken);
                    packages.ExpectFromCatchUp(list.Names);
                    foreach (var name in list.Names.Where(n => packages.All.All(h => h.Name != n)))
                    {
                        // A peer that stops between its list and the fetch is left for the next one, not given up on.
                        await FetchAndDeployAsync(name, endpoint, cancellationToken, peerMayBeGone: true);
                    }

                    return;
                }
                catch (RpcException e) when (!cancellationToken.IsCancellationRequested)
                {
                    lastFailure = e;
                    LogPeerDidNotAnswer(logger, peer.Node, e.StatusCode, e.Status.Detail);
                }
            }

            if (started.Elapsed + CopyRetryInterval > CopyWait)
            {
                // The deploys that follow still arrive through the group; what the others had is missing here.
                LogCopyFailed(logger, lastFailure, CopyWait.TotalSeconds);
                return;
            }

            await Task.Delay(CopyRetryInterval, cancellationToken);
        }
    }

    /// <summary>
    /// Fetches package <paramref name="name"/> from <paramref name="source"/> and deploys it here; with
    /// <paramref name="peerMayBeGone"/>, a source that does not answer throws its <see cref="RpcException"/> for the
    /// caller to ask another manager, rather than being logged.
    /// </summary>
    private async Task FetchAndDeployAsync(string name, string source, CancellationToken cancellationToken, bool peerMayBeGone = false)
    {
        try
        {
            var response = await new PackageDistribution.PackageDistributionClient(channels.For(source)).GetPackageAsync(
                new GetPackageRequest { Name = name }, deadline: DateTime.UtcNow + FetchDeadline, cancellationToken: cancellationToken);
            await deployer.DeployZipAsync(response.PackageZip.Memory, cancellationToken);
        }
        catch (Exception e) when (e is PackageException || (e is RpcException && !peerMayBeGone))
        {
            LogFetchFailed(logger, e, name, source);
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Package {Name} deployed at {Source} differs from the one of that name deployed here; this manager keeps its own")]
    private static partial void LogConflict(ILogger logger, string name, string source);

    [LoggerMessage(Level = LogLevel.Error, Message = "Could not copy the packages other managers have: none answered within {Seconds:F0} s; only packages deployed from now on will be served here")]
    private static partial void LogCopyFailed(ILogger logger, Exception? exception, double seconds);

    [LoggerMessage(Level = LogLevel.Information, Message = "No report from {Node} yet: asking another manager for the packages")]
    private static partial void LogNoPeer(ILogger logger, string node);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Node} did not list its packages ({Status}: {Detail}): asking another manager")]
    private static partial void LogPeerDidNotAnswer(ILogger logger, string node, StatusCode status, string detail);

    [LoggerMessage(Level = LogLevel.Error, Message = "Could not deploy package {Name} from {Source}; this manager does not serve it")]
    private static partial void LogFetchFailed(ILogger logger, Exception exception, string name, string source);
}
