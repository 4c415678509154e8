using Quintet.Components;

namespace Quintet.Integration.Tests.Probe;

/// <summary>Exercises votes, locks and a fenced resource on request.</summary>
public sealed class ProbeComponent : Component, IProbe
{
    private readonly FencingGate _gate = new();
    private readonly Dictionary<string, IVotingGroup> _groups = [];
    private readonly Dictionary<string, IBarrier> _barriers = [];
    private ILockHold? _hold;
    private long _settled;

    /// <inheritdoc />
    public Task<ProbeReply> WhereAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        var reply = Reply(true);
        reply.Result = CurrentCall?.Caller ?? string.Empty;
        reply.Details = [.. CurrentCall?.CallerRoles ?? []];
        if (CurrentCall?.IsCallerInRole("admin") == true)
        {
            reply.Details.Add("is-admin");
        }

        return Task.FromResult(reply);
    }

    /// <inheritdoc />
    public async Task<ProbeReply> JoinVotingAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        VoteHandler handler = request.Behavior switch
        {
            "accept" => (_, _) => Task.FromResult(Vote.Yes),
            "reject" => (_, _) => Task.FromResult(Vote.No("the probe rejects")),
            _ => async (_, ct) =>
            {
                await Task.Delay(Timeout.Infinite, ct);
                return Vote.Yes;
            },
        };
        _groups[request.Group] = await Context.Coordination.JoinVotingAsync(request.Group, handler, cancellationToken);
        return Reply(true);
    }

    /// <inheritdoc />
    public async Task<ProbeReply> ProposeAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (!_groups.TryGetValue(request.Group, out var group))
        {
            group = _groups[request.Group] = await Context.Coordination.JoinVotingAsync(request.Group, cancellationToken: cancellationToken);
        }

        var rule = request.Rule switch
        {
            "All" => VoteRule.All,
            "Majority" => VoteRule.Majority,
            _ => VoteRule.QuorumOf(request.K),
        };
        var outcome = await group.ProposeAsync("probe", Array.Empty<byte>(), rule, TimeSpan.FromMilliseconds(request.TimeoutMs), cancellationToken: cancellationToken);
        var reply = Reply(outcome.Accepted);
        reply.Result = outcome.Result.ToString();
        reply.Details.AddRange(outcome.Ballots.Select(b => $"{b.Participant}={b.State}"));
        reply.Details.Add(outcome.Reason);
        return reply;
    }

    /// <inheritdoc />
    public async Task<ProbeReply> AcquireAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var distributed = await Context.Coordination.LockAsync(request.Group, cancellationToken);
        try
        {
            _hold = await distributed.AcquireAsync(request.Exclusive ? LockMode.Exclusive : LockMode.Shared, TimeSpan.FromMilliseconds(request.TimeoutMs), cancellationToken);
            var reply = Reply(true);
            reply.Token = _hold.Token;
            return reply;
        }
        catch (TimeoutException e)
        {
            var reply = Reply(false);
            reply.Details.Add(e.Message);
            return reply;
        }
    }

    /// <inheritdoc />
    public async Task<ProbeReply> ReleaseAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        if (_hold is { } hold)
        {
            // Forgotten only once released: a release that throws left the hold to be released again.
            await hold.ReleaseAsync(cancellationToken);
            _hold = null;
        }

        return Reply(true);
    }

    /// <inheritdoc />
    public async Task<ProbeReply> SettleAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var waitFirst = request.Behavior == "wait-first";
        if (waitFirst)
        {
            await Task.Delay(request.TimeoutMs, cancellationToken);
        }

        var run = ++_settled;
        await Context.Checkpoints.AppendAsync(BitConverter.GetBytes(run), cancellationToken);
        if (!waitFirst)
        {
            await Task.Delay(request.TimeoutMs, cancellationToken);
        }

        var reply = Reply(true);
        reply.Token = run;
        return reply;
    }

    /// <inheritdoc />
    public Task<ProbeReply> WriteAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var reply = Reply(_gate.TryAdmit(request.Token));
        reply.Token = _gate.Highest;
        return Task.FromResult(reply);
    }

    /// <inheritdoc />
    public async Task<ProbeReply> JoinBarrierAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _barriers[request.Group] = await Context.Coordination.JoinBarrierAsync(request.Group, cancellationToken);
        return Reply(true);
    }

    /// <inheritdoc />
    public async Task<ProbeReply> ArriveAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (!_barriers.TryGetValue(request.Group, out var barrier))
        {
            throw new ComponentFaultException(ComponentFault.FailedPrecondition, $"The probe has not joined barrier '{request.Group}'.");
        }

        var phase = await barrier.SignalAndWaitAsync(cancellationToken: cancellationToken);
        var reply = Reply(true);
        reply.Result = phase.Generation.ToString(System.Globalization.CultureInfo.InvariantCulture);
        reply.Details.AddRange(phase.Arrived.Select(k => $"arrived={k}"));
        reply.Details.AddRange(phase.Failed.Select(k => $"failed={k}"));
        return reply;
    }

    /// <inheritdoc />
    public async Task<ProbeReply> ShareAsync(ProbeRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var dictionary = await Context.Shared.DictionaryAsync(request.Group, cancellationToken);
        foreach (var line in request.Behavior.Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            var equals = line.IndexOf('=', StringComparison.Ordinal);
            await dictionary.SetAsync(line[..equals], System.Text.Encoding.UTF8.GetBytes(line[(equals + 1)..]), cancellationToken);
        }

        if (request.Token != 0)
        {
            await dictionary.SetAsync("binary", new byte[] { 0, 1, 2, 3 }, cancellationToken);
        }

        return Reply(true);
    }

    private ProbeReply Reply(bool ok) => new() { Manager = Context.Manager, Ok = ok };
}
