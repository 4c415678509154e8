using Google.Protobuf;
using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Core.Groups;
using Quintet.Manager.Configuration;
using Quintet.Manager.Internal;
using Quintet.Manager.Peers;
using Quintet.Runtime.Replication;
using Quintet.Runtime.Structures;

namespace Quintet.Manager.Security;

/// <summary>
/// This manager's replica of the component role assignments: a durable replicated state machine every manager joins
/// (<c>quintet.rsm/security/roles</c>), so that a change an administrator makes on any manager is applied by every manager
/// at the same point of the managers' total order, is logged on each manager's disk (a whole-cluster restart keeps it),
/// and reaches a manager that joins later with the state transfer. Components cannot reach it: the shared structures
/// they open are named under other prefixes.
/// </summary>
internal sealed partial class RoleAssignments(
    GroupService groups,
    ClusterNode node,
    SharedStructures shared,
    ManagerIdentity identity,
    IOptions<ManagerOptions> options,
    ILogger<RoleAssignments> logger) : BackgroundService
{
    /// <summary>The machine's name; its light group is <c>quintet.rsm/security/roles</c>.</summary>
    public const string MachineName = "security/roles";

    private readonly RoleAssignmentsState _state = new();
    private volatile ReplicatedStateMachine<RoleAssignmentsState>? _machine;

    /// <summary>Whether this manager holds the assignments yet (it joins once it is up).</summary>
    public bool IsReady => _machine is not null;

    /// <summary>The assignments as this replica has applied them; empty before it joined.</summary>
    public RoleAssignmentsView Current => _state.Assignments;

    /// <summary>Applies <paramref name="command"/> on every manager, in the total order; the role's members after it.</summary>
    /// <exception cref="RpcException">UNAVAILABLE: this manager has not joined the assignments yet, or is leaving.</exception>
    public async Task<IReadOnlyList<string>> ChangeAsync(RoleCommand command, CancellationToken cancellationToken)
    {
        var machine = Machine();
        try
        {
            var result = await machine.ExecuteAsync(command.ToByteArray(), cancellationToken);
            return [.. RoleCommandResult.Parser.ParseFrom(result).Members];
        }
        catch (Exception e) when (e is GroupUnavailableException or ObjectDisposedException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, $"Nothing was changed: this manager is not in the managers' group right now ({e.Message}); retry, or ask another manager."));
        }
    }

    /// <summary>Waits until every change ordered before this call is applied here: a read after it sees every change made on any manager before.</summary>
    public async Task SyncAsync(CancellationToken cancellationToken)
    {
        try
        {
            await Machine().SyncAsync(cancellationToken);
        }
        catch (Exception e) when (e is GroupUnavailableException or ObjectDisposedException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, $"This manager is not in the managers' group right now ({e.Message}); retry, or ask another manager."));
        }
    }

    private ReplicatedStateMachine<RoleAssignmentsState> Machine() => _machine
        ?? throw new RpcException(new Status(StatusCode.Unavailable, "This manager has not loaded the role assignments yet (it does once it has joined the cluster); retry in a few seconds."));

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            await node.Up.WaitAsync(stoppingToken);
            var durability = shared.Durability ?? throw new InvalidOperationException("The manager's shared structures have no durability settings.");
            var machineOptions = new ReplicatedStateMachineOptions
            {
                Logger = logger,
                Durability = durability.WithDirectory(Path.Combine(options.Value.DataDirectoryFor(identity.NodeName), "roles")),
            };
            while (true)
            {
                try
                {
                    _machine = await ReplicatedStateMachine.JoinAsync(groups, MachineName, _state, machineOptions, stoppingToken);
                    LogJoined(logger, _state.Assignments.Packages.Count);
                    return;
                }
                catch (TimeoutException e)
                {
                    // No manager offered the assignments, or their transfer stalled: calls on packages that declare
                    // roles are refused (UNAVAILABLE) until they arrive.
                    LogJoinRetried(logger, e.Message);
                }
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
        catch (GroupUnavailableException e)
        {
            // The managers group ended under the join: this incarnation is leaving or was removed.
            LogLeftBeforeJoin(logger, e.Message);
        }
    }

    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        await base.StopAsync(cancellationToken);
        if (_machine is { } machine)
        {
            await machine.DisposeAsync();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Joined the component role assignments ({Packages} package(s) with members)")]
    private static partial void LogJoined(ILogger logger, int packages);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Joining the component role assignments timed out; retrying: {Reason}")]
    private static partial void LogJoinRetried(ILogger logger, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Left before joining the component role assignments: {Reason}")]
    private static partial void LogLeftBeforeJoin(ILogger logger, string reason);
}
