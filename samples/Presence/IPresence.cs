using ProtoBuf;
using Quintet.Components;

namespace Samples.Presence;

/// <summary>A participant per key that sees the others come and go and hears what they say.</summary>
[ComponentContract("samples.presence.Presence")]
public interface IPresence
{
    /// <summary>Joins the participants (the instance's ClassGroup) and returns who is there.</summary>
    Task<Participants> JoinAsync(JoinRequest request, CancellationToken cancellationToken);

    /// <summary>Says something to every participant, in one order for all.</summary>
    Task<Participants> SayAsync(Saying request, CancellationToken cancellationToken);

    /// <summary>What this participant heard and which participants it saw leave.</summary>
    Task<Inbox> ReadAsync(ReadRequest request, CancellationToken cancellationToken);
}

/// <summary>Asks to join.</summary>
[ProtoContract]
public sealed class JoinRequest
{
}

/// <summary>Asks for the inbox.</summary>
[ProtoContract]
public sealed class ReadRequest
{
}

/// <summary>Something to say.</summary>
[ProtoContract]
public sealed class Saying
{
    /// <summary>The text.</summary>
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;
}

/// <summary>The keys of the participants in the current view.</summary>
[ProtoContract]
public sealed class Participants
{
    /// <summary>Participant keys, sorted.</summary>
    [ProtoMember(1)]
    public List<string> Keys { get; } = [];

    /// <summary>The manager hosting this participant.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;
}

/// <summary>What a participant heard, in order, and who it saw leave.</summary>
[ProtoContract]
public sealed class Inbox
{
    /// <summary>"key: text", in delivery order.</summary>
    [ProtoMember(1)]
    public List<string> Heard { get; } = [];

    /// <summary>Keys of participants that left a view this one was in.</summary>
    [ProtoMember(2)]
    public List<string> Left { get; } = [];

    /// <summary>The participants now.</summary>
    [ProtoMember(3)]
    public List<string> Present { get; } = [];

    /// <summary>What this manager's class factory last saw in the ClassGroup: participant keys, sorted.</summary>
    [ProtoMember(4)]
    public List<string> FactorySawParticipants { get; } = [];

    /// <summary>What this manager's class factory last saw: the managers whose factories are in the ClassGroup, sorted.</summary>
    [ProtoMember(5)]
    public List<string> FactorySawManagers { get; } = [];
}
