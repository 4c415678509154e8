using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Probe;

/// <summary>Drives the coordination tools from a test.</summary>
[ComponentContract("quintet.tests.Probe")]
public interface IProbe
{
    /// <summary>Where the probe runs; <see cref="ProbeReply.Result"/> is the caller and <see cref="ProbeReply.Details"/> its roles.</summary>
    Task<ProbeReply> WhereAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>Joins the voting group <see cref="ProbeRequest.Group"/> voting as <see cref="ProbeRequest.Behavior"/> says.</summary>
    Task<ProbeReply> JoinVotingAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>Proposes to the group and returns the outcome.</summary>
    Task<ProbeReply> ProposeAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>Acquires the lock <see cref="ProbeRequest.Group"/> and holds it until <see cref="ReleaseAsync"/>.</summary>
    Task<ProbeReply> AcquireAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>Releases the lock it holds.</summary>
    Task<ProbeReply> ReleaseAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>As a resource: admits a write fenced by <see cref="ProbeRequest.Token"/>, or refuses it as stale.</summary>
    Task<ProbeReply> WriteAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>Joins the barrier <see cref="ProbeRequest.Group"/> as a participant that has not arrived.</summary>
    Task<ProbeReply> JoinBarrierAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Arrives at the barrier it joined and waits for the phase: <see cref="ProbeReply.Result"/> is the generation,
    /// <see cref="ProbeReply.Details"/> <c>arrived=key</c> and <c>failed=key</c> entries.
    /// </summary>
    Task<ProbeReply> ArriveAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Sets entries of the shared dictionary <see cref="ProbeRequest.Group"/>: each of <see cref="ProbeRequest.Behavior"/>'s
    /// lines is <c>key=value</c> (UTF-8), and <see cref="ProbeRequest.Token"/>, when not 0, adds the entry <c>binary</c>
    /// holding bytes 0 to 3.
    /// </summary>
    Task<ProbeReply> ShareAsync(ProbeRequest request, CancellationToken cancellationToken);

    /// <summary>
    /// Counts a run and makes it durable (a record in its checkpoint stream), then waits <see cref="ProbeRequest.TimeoutMs"/>
    /// with the call's token (before the count and the write instead, for <see cref="ProbeRequest.Behavior"/>
    /// <c>wait-first</c>), and answers the count as <see cref="ProbeReply.Token"/>: a call its caller abandons shows
    /// whether it ran to its end, and how often it ran.
    /// </summary>
    Task<ProbeReply> SettleAsync(ProbeRequest request, CancellationToken cancellationToken);
}

/// <summary>What to do.</summary>
[ProtoContract]
public sealed class ProbeRequest
{
    /// <summary>The group or lock.</summary>
    [ProtoMember(1)]
    public string Group { get; set; } = string.Empty;

    /// <summary>For a voter: <c>accept</c>, <c>reject</c> or <c>silent</c> (never answers).</summary>
    [ProtoMember(2)]
    public string Behavior { get; set; } = string.Empty;

    /// <summary>For a proposal: <c>All</c>, <c>Majority</c> or <c>Quorum</c>.</summary>
    [ProtoMember(3)]
    public string Rule { get; set; } = string.Empty;

    /// <summary>For a quorum: k.</summary>
    [ProtoMember(4)]
    public int K { get; set; }

    /// <summary>A proposal's or a lock request's timeout.</summary>
    [ProtoMember(5)]
    public int TimeoutMs { get; set; }

    /// <summary>For a lock: true for exclusive.</summary>
    [ProtoMember(6)]
    public bool Exclusive { get; set; }

    /// <summary>For a write: the writer's fencing token.</summary>
    [ProtoMember(7)]
    public long Token { get; set; }
}

/// <summary>What happened.</summary>
[ProtoContract]
public sealed class ProbeReply
{
    /// <summary>The probe's manager.</summary>
    [ProtoMember(1)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Accepted (a vote), granted (a lock), admitted (a write).</summary>
    [ProtoMember(2)]
    public bool Ok { get; set; }

    /// <summary>A vote's result.</summary>
    [ProtoMember(3)]
    public string Result { get; set; } = string.Empty;

    /// <summary>The ballots (<c>key=state</c>) or the reason of a refusal.</summary>
    [ProtoMember(4)]
    public List<string> Details { get; set; } = [];

    /// <summary>A lock's fencing token.</summary>
    [ProtoMember(5)]
    public long Token { get; set; }
}
