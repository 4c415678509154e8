using ProtoBuf;
using Quintet.Components;

namespace Samples.HotStandby;

/// <summary>
/// A session table kept by a primary and hot standbys: every instance (any key) is a replica; the oldest is the
/// primary and takes writes, the others hold a copy of every acknowledged write and take over when it fails.
/// </summary>
[ComponentContract("samples.hotstandby.SessionStore")]
public interface ISessionStore
{
    /// <summary>Writes a session at the primary; a standby refuses and names the primary.</summary>
    Task<PutReply> PutAsync(PutRequest request, CancellationToken cancellationToken);

    /// <summary>Reads a session from this replica's copy.</summary>
    Task<GetReply> GetAsync(GetRequest request, CancellationToken cancellationToken);

    /// <summary>This replica's role, manager and copy size (the first call activates the replica and registers it).</summary>
    Task<ReplicaStatus> StatusAsync(StatusRequest request, CancellationToken cancellationToken);
}

/// <summary>A session to write.</summary>
[ProtoContract]
public sealed class PutRequest
{
    /// <summary>The session id.</summary>
    [ProtoMember(1)]
    public string Session { get; set; } = string.Empty;

    /// <summary>Its value.</summary>
    [ProtoMember(2)]
    public string Value { get; set; } = string.Empty;
}

/// <summary>Whether the write was taken, and by whom.</summary>
[ProtoContract]
public sealed class PutReply
{
    /// <summary>True if this replica is the primary and every standby holds the write.</summary>
    [ProtoMember(1)]
    public bool Accepted { get; set; }

    /// <summary>The primary's key, for a client to call it instead.</summary>
    [ProtoMember(2)]
    public string Primary { get; set; } = string.Empty;
}

/// <summary>A session to read.</summary>
[ProtoContract]
public sealed class GetRequest
{
    /// <summary>The session id.</summary>
    [ProtoMember(1)]
    public string Session { get; set; } = string.Empty;
}

/// <summary>A session's value at this replica.</summary>
[ProtoContract]
public sealed class GetReply
{
    /// <summary>Whether this replica has the session.</summary>
    [ProtoMember(1)]
    public bool Found { get; set; }

    /// <summary>Its value.</summary>
    [ProtoMember(2)]
    public string Value { get; set; } = string.Empty;
}

/// <summary>Asks for a replica's status.</summary>
[ProtoContract]
public sealed class StatusRequest
{
}

/// <summary>A replica's role and copy.</summary>
[ProtoContract]
public sealed class ReplicaStatus
{
    /// <summary>True at the primary.</summary>
    [ProtoMember(1)]
    public bool IsPrimary { get; set; }

    /// <summary>The manager hosting this replica.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Sessions in this replica's copy.</summary>
    [ProtoMember(3)]
    public int Sessions { get; set; }

    /// <summary>The replicas' keys, oldest (the primary) first.</summary>
    [ProtoMember(4)]
    public List<string> Replicas { get; } = [];
}

/// <summary>The replicated state: sessions by id.</summary>
[ProtoContract]
public sealed class SessionTable
{
    /// <summary>The sessions.</summary>
    [ProtoMember(1)]
    public Dictionary<string, string> Sessions { get; } = [];
}
