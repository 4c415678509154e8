using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;

namespace Quintet.Manager.Diagnostics;

/// <summary>
/// A synthetic load on light groups, for tests and benchmarks: members hosted by this manager join the named light
/// groups (alternately as <c>instance</c> and <c>factory</c>) and send at a rate, a mix of multicasts in both orderings,
/// multicasts to one role and messages to one member; with churn, each member leaves after a few seconds and another
/// joins in its place, so that light views change while the managers' view does not.
/// </summary>
internal sealed partial class LightGroupWorkload(GroupService groups, ILogger<LightGroupWorkload> logger) : IAsyncDisposable
{
    private static readonly string[] Roles = ["instance", "factory"];

    private readonly Lock _gate = new();
    private CancellationTokenSource? _run;
    private Task _running = Task.CompletedTask;
    private long _sent;
    private long _refused;
    private long _delivered;
    private long _joined;
    private double _rate;

    public long Sent => Interlocked.Read(ref _sent);

    public long Refused => Interlocked.Read(ref _refused);

    public long Delivered => Interlocked.Read(ref _delivered);

    public long Joined => Interlocked.Read(ref _joined);

    /// <summary>Starts the load (or changes its rate); an empty group list stops it and every member leaves.</summary>
    public async Task SetAsync(IReadOnlyList<string> groupNames, int membersPerGroup, double ratePerMember, bool churn)
    {
        Task previous;
        CancellationTokenSource? run;
        lock (_gate)
        {
            Volatile.Write(ref _rate, ratePerMember);
            if (_run is not null && groupNames.Count > 0)
            {
                // Already running: only the rate changes (members stay, so that a quiet group can be checked).
                return;
            }

            previous = _running;
            _run?.Cancel();
            _run = null;
            run = groupNames.Count > 0 ? new CancellationTokenSource() : null;
            _run = run;
        }

        await previous;
        if (run is not null)
        {
            var token = run.Token;
            var loops = groupNames.SelectMany(g => Enumerable.Range(0, membersPerGroup).Select(i => MemberLoopAsync(g, Roles[i % Roles.Length], churn, token))).ToList();
            lock (_gate)
            {
                _running = Task.WhenAll(loops);
            }
        }
    }

    /// <summary>One member slot: join, send until churn or stop, leave; again with churn.</summary>
    private async Task MemberLoopAsync(string group, string role, bool churn, CancellationToken stop)
    {
        var random = new Random();
        while (!stop.IsCancellationRequested)
        {
            LightGroupMember member;
            try
            {
                member = await groups.JoinLightGroupAsync(group, new LightGroupJoinOptions { Role = role }, stop);
                Interlocked.Increment(ref _joined);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            var drain = DrainAsync(member, stop);
            using var lifetime = CancellationTokenSource.CreateLinkedTokenSource(stop);
            if (churn)
            {
                lifetime.CancelAfter(TimeSpan.FromMilliseconds(random.Next(1000, 4000)));
            }

            await SendLoopAsync(member, random, lifetime.Token);
            try
            {
                using var leaveTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
                await member.LeaveAsync(leaveTimeout.Token);
            }
            catch (OperationCanceledException)
            {
                LogLeaveTimedOut(logger, group);
            }

            await drain;
        }
    }

    private async Task SendLoopAsync(LightGroupMember member, Random random, CancellationToken token)
    {
        var credit = 0.0;
        var last = DateTime.UtcNow;
        while (!token.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(TimeSpan.FromMilliseconds(20), token);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            var now = DateTime.UtcNow;
            credit = Math.Min(credit + ((now - last).TotalSeconds * Volatile.Read(ref _rate)), 50);
            last = now;
            for (; credit >= 1; credit--)
            {
                var payload = new byte[32];
                random.NextBytes(payload);
                try
                {
                    switch (random.Next(4))
                    {
                        case 0 when member.View is { } view:
                            await member.SendAsync(view.Members[random.Next(view.Members.Length)].Id, payload, token);
                            break;
                        case 1:
                            await member.MulticastAsync(payload, MessageOrdering.Total, Roles[random.Next(Roles.Length)], token);
                            break;
                        default:
                            await member.MulticastAsync(payload, random.Next(2) == 0 ? MessageOrdering.Atomic : MessageOrdering.Total, cancellationToken: token);
                            break;
                    }

                    Interlocked.Increment(ref _sent);
                }
                catch (GroupUnavailableException)
                {
                    Interlocked.Increment(ref _refused);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    /// <summary>Reads the member's events until it has left (its channel completes) or the workload stops.</summary>
    private async Task DrainAsync(LightGroupMember member, CancellationToken stop)
    {
        try
        {
            await foreach (var groupEvent in member.Events.ReadAllAsync(stop))
            {
                if (groupEvent is LightMessageDelivered)
                {
                    Interlocked.Increment(ref _delivered);
                }
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }

    /// <summary>Stops the load without waiting for members to leave: the manager is going, and its members with it.</summary>
    public ValueTask DisposeAsync()
    {
        lock (_gate)
        {
            _run?.Cancel();
        }

        return ValueTask.CompletedTask;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Light workload: a member of {Group} did not manage to leave within 30 s")]
    private static partial void LogLeaveTimedOut(ILogger logger, string group);
}
