using System.Diagnostics;
using System.Net.Sockets;
using Akka.Actor;
using Akka.Actor.Setup;
using Akka.Cluster;
using Akka.Remote.Transport.DotNetty;
using Google.Protobuf.Reflection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Quintet.Core.Diagnostics;
using Quintet.Core.Groups.Direct;
using Quintet.Core.Serialization;
using Quintet.Security;

namespace Quintet.Core.Cluster;

/// <summary>
/// This manager's membership in the cluster: owns the actor system, joins the seeds, leaves cleanly on stop,
/// and reports when the cluster has removed this incarnation (after which it never rejoins: the process
/// restarts and joins as a new incarnation with a new uid).
/// </summary>
public sealed partial class ClusterNode : IAsyncDisposable
{
    private readonly ClusterOptions _options;
    private readonly ILoggerFactory _loggerFactory;
    private readonly ILogger<ClusterNode> _logger;
    private readonly IReadOnlyList<FileDescriptor> _wireFiles;
    private readonly ClusterSecurity _security;
    private readonly TaskCompletionSource _removed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Lock _removalGate = new();
    private readonly TaskCompletionSource _up = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private ActorSystem? _system;
    private DirectGroupTransport? _groupTransport;
    private Akka.Cluster.Cluster? _cluster;
    private volatile bool _stopping;
    private StallFence? _stallFence;

    /// <summary>Creates the node; nothing starts until <see cref="StartAsync"/>.</summary>
    /// <param name="options">The cluster settings.</param>
    /// <param name="loggerFactory">Where the node's, the transports' and Akka.NET's logs go.</param>
    /// <param name="wireFiles">The proto files whose messages may travel between managers.</param>
    /// <param name="security">This manager's certificate and trusted CAs: when enabled, the cluster port and the group
    /// port use mutual TLS and admit only managers of the cluster's CAs. <see cref="ClusterSecurity.Open"/> when null.</param>
    public ClusterNode(IOptions<ClusterOptions> options, ILoggerFactory loggerFactory, IEnumerable<WireProtoFile> wireFiles, ClusterSecurity? security = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(loggerFactory);
        ArgumentNullException.ThrowIfNull(wireFiles);
        _options = options.Value;
        _loggerFactory = loggerFactory;
        _logger = loggerFactory.CreateLogger<ClusterNode>();
        _wireFiles = [.. wireFiles.Select(f => f.Descriptor)];
        _security = security ?? ClusterSecurity.Open;
    }

    /// <summary>The running actor system.</summary>
    /// <exception cref="InvalidOperationException">Before <see cref="StartAsync"/>.</exception>
    public ActorSystem System => _system ?? throw new InvalidOperationException("The cluster node has not started.");

    /// <summary>The Akka.NET cluster extension of <see cref="System"/>.</summary>
    public Akka.Cluster.Cluster Cluster => _cluster ?? throw new InvalidOperationException("The cluster node has not started.");

    /// <summary>The group transport's own connections, or null when group messages go through remoting.</summary>
    internal DirectGroupTransport? GroupTransport => _groupTransport;

    /// <summary>The cluster name from <see cref="ClusterOptions.Name"/>.</summary>
    public string ClusterName => _options.Name;

    /// <summary>This manager's cluster address (with the actual port when the configured port was 0).</summary>
    public Address SelfAddress => Cluster.SelfAddress;

    /// <summary>True once this manager is an Up member and until it starts to leave or is removed.</summary>
    public bool IsUp => _cluster is { } c && !_removed.Task.IsCompleted && c.SelfMember.Status == MemberStatus.Up;

    /// <summary>Completes when this manager first becomes an Up member.</summary>
    public Task Up => _up.Task;

    /// <summary>
    /// Completes when the cluster removed this manager without it asking to leave: it was downed (for example
    /// after a pause longer than the failure budget, or as the minority of a partition) or quarantined, or it stood
    /// still for as long as the others take to remove a manager (see <see cref="RemovalReason"/>).
    /// This incarnation is over; the host should exit so that its supervisor restarts it as a new one.
    /// </summary>
    public Task Removed => _removed.Task;

    /// <summary>Why this incarnation ended, in a sentence for the log, once <see cref="Removed"/> completed; null before.</summary>
    public string? RemovalReason { get; private set; }

    /// <summary>Starts the actor system and begins joining the seeds (or forms a new cluster when there are none).</summary>
    /// <exception cref="ClusterStartException">The transport could not bind; the message names the setting.</exception>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (_system is not null)
        {
            throw new InvalidOperationException("The cluster node has already started.");
        }

        var tls = _security.Enabled ? new ManagerTls(_security, _loggerFactory.CreateLogger<ManagerTls>()) : null;
        List<string> roles = [AkkaConfig.ManagerRole];
        if (_options.GroupTransport == GroupTransportKind.Direct)
        {
            try
            {
                _groupTransport = new DirectGroupTransport(_options.Host, _options.GroupPort, _loggerFactory.CreateLogger<DirectGroupTransport>(), tls);
            }
            catch (SocketException ex)
            {
                throw new ClusterStartException(
                    ex.SocketErrorCode == SocketError.AddressAlreadyInUse
                        ? $"{ClusterOptions.SectionName}:GroupPort: port {_options.GroupPort} on {_options.Host} is already in use; choose another port (0 picks a free one) or stop the process that holds it."
                        : $"The group transport could not listen on {_options.Host}:{_options.GroupPort} ({ex.Message}); check {ClusterOptions.SectionName}:Host and {ClusterOptions.SectionName}:GroupPort.",
                    ex);
            }

            // The port travels with the membership: every manager learns it with the member itself.
            roles.Add(_groupTransport.Role);
        }

        var config = AkkaConfig.Build(_options, roles, tls: tls is not null);
        List<Setup> setups = [BootstrapSetup.Create().WithConfig(config), new LoggerFactorySetup(_loggerFactory), new WireMessageSetup(_wireFiles)];
        if (tls is not null)
        {
            // Chain validation against the machine's roots and host names stays off: the custom check admits a manager
            // certificate of the cluster's CAs, and nothing else, both ways.
            setups.Add(new DotNettySslSetup(tls.Certificate, suppressValidation: false, requireMutualAuthentication: true, tls.AkkaValidator));
        }

        var setup = ActorSystemSetup.Create([.. setups]);

        try
        {
            _system = ActorSystem.Create(_options.Name, setup);
        }
        catch (Exception ex) when (IsAddressInUse(ex))
        {
            DisposeTransportAndFence();
            throw new ClusterStartException(
                $"{ClusterOptions.SectionName}:Port: port {_options.Port} on {_options.Host} is already in use; choose another port or stop the process that holds it.", ex);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            DisposeTransportAndFence();
            throw new ClusterStartException(
                $"The cluster transport could not start on {_options.Host}:{_options.Port} ({ex.GetBaseException().Message}); check {ClusterOptions.SectionName}:Host and {ClusterOptions.SectionName}:Port.", ex);
        }

        _cluster = Akka.Cluster.Cluster.Get(_system);
        var cluster = _cluster;
        if (_groupTransport is not null)
        {
            var deaths = new ProcessDeathDetector(cluster, _options.FailureDetector.ProcessDeathEvidence, _loggerFactory.CreateLogger<ProcessDeathDetector>());
            _groupTransport.OnRefusedAfterClose(deaths.OnRefusedAfterClose);
            _groupTransport.Start(cluster.SelfAddress.ToString(), cluster.SelfUniqueAddress.Uid, (node, uid) => DirectGroupTransport.RouteIn(cluster, node, uid));
        }

        _system.ActorOf(Props.Create(() => new MembershipEventsActor(_loggerFactory.CreateLogger<MembershipEventsActor>())), "quintet-membership-events");
        ClusterMetrics.Observe(this);

        _cluster.RegisterOnMemberUp(() =>
        {
            LogUp(_logger, SelfAddress, _cluster.SelfUniqueAddress.Uid);
            _stallFence ??= new StallFence(StallFence.LimitFor(_options), OnStalledPastRemoval, _logger);
            _up.TrySetResult();
        });
        // Removal is known before the actor system has shut down; other services may fail meanwhile (their groups end
        // with the membership) and stop the host first, which must still exit as removed.
        _cluster.RegisterOnMemberRemoved(OnTerminated);
        _ = _system.WhenTerminated.ContinueWith(_ => OnTerminated(), TaskScheduler.Default);

        var seeds = _options.Seeds
            .Select(s => ClusterAddress.TryParseSeed(s, _options.Name, tls is not null, out var a, out var error) ? a! : throw new ClusterStartException($"{ClusterOptions.SectionName}:Seeds: {error}."))
            .Where(a => a != SelfAddress)
            .ToList();
        if (seeds.Count == 0)
        {
            LogFormingCluster(_logger, SelfAddress);
            _cluster.Join(SelfAddress);
        }
        else
        {
            LogJoining(_logger, SelfAddress, string.Join(", ", seeds));
            _cluster.JoinSeedNodes(seeds);
        }

        return Task.CompletedTask;
    }

    /// <summary>Leaves the cluster gracefully (the others see this manager leave, not fail), then stops the actor system.</summary>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _stopping = true;
        if (_system is null)
        {
            return;
        }

        var started = Stopwatch.GetTimestamp();
        try
        {
            await CoordinatedShutdown.Get(_system).Run(CoordinatedShutdown.ClrExitReason.Instance).WaitAsync(cancellationToken);
        }
        catch (OperationCanceledException)
        {
            LogLeaveCut(_logger);
            await _system.Terminate();
        }

        DisposeTransportAndFence();
        LogLeft(_logger, Stopwatch.GetElapsedTime(started).TotalMilliseconds);
    }

    /// <summary>The membership as this manager sees it now.</summary>
    public ClusterSnapshot Snapshot()
    {
        var cluster = Cluster;
        var state = cluster.State;
        var unreachable = state.Unreachable.Select(m => m.UniqueAddress).ToHashSet();
        var members = state.Members
            .Select(m => new MemberSnapshot(m.Address, m.UniqueAddress.Uid, m.Status, !unreachable.Contains(m.UniqueAddress), m.Roles))
            .ToList();
        return new ClusterSnapshot(cluster.SelfAddress, state.Leader, members);
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        _stopping = true;
        if (_system is not null)
        {
            await _system.Terminate();
        }

        DisposeTransportAndFence();
    }

    private void DisposeTransportAndFence()
    {
        _stallFence?.Dispose();
        _groupTransport?.Dispose();
    }

    private void OnTerminated() => EndIncarnation("The cluster removed this manager");

    // The fence has logged the stall; the others have most likely removed this manager by now, but it cannot know.
    private void OnStalledPastRemoval() => EndIncarnation("This manager stood still for longer than the others wait before removing a manager");

    private void EndIncarnation(string reason)
    {
        if (_stopping)
        {
            return;
        }

        lock (_removalGate)
        {
            if (_removed.Task.IsCompleted)
            {
                return;
            }

            RemovalReason = reason;
            _removed.SetResult();
        }

        LogRemoved(_logger, reason, _cluster?.SelfAddress);
    }

    private static bool IsAddressInUse(Exception ex)
    {
        for (Exception? e = ex; e is not null; e = e.InnerException)
        {
            if (e is SocketException { SocketErrorCode: SocketError.AddressAlreadyInUse })
            {
                return true;
            }

            if (e is AggregateException aggregate && aggregate.InnerExceptions.Any(IsAddressInUse))
            {
                return true;
            }
        }

        return false;
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Starting a new cluster at {Address}: no seeds are configured")]
    private static partial void LogFormingCluster(ILogger logger, Address address);

    [LoggerMessage(Level = LogLevel.Information, Message = "Joining the cluster from {Address} through seeds {Seeds}")]
    private static partial void LogJoining(ILogger logger, Address address, string seeds);

    [LoggerMessage(Level = LogLevel.Information, Message = "This manager is Up at {Address} (uid {Uid})")]
    private static partial void LogUp(ILogger logger, Address address, long uid);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Reason} ({Address}); this incarnation ends and must restart to rejoin")]
    private static partial void LogRemoved(ILogger logger, string reason, Address? address);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Leaving the cluster took too long; stopping without waiting for the others")]
    private static partial void LogLeaveCut(ILogger logger);

    [LoggerMessage(Level = LogLevel.Information, Message = "Left the cluster in {ElapsedMs:F0} ms")]
    private static partial void LogLeft(ILogger logger, double elapsedMs);
}
