using System.Text.Json;
using System.Text.Json.Serialization;
using Quintet.Components;

namespace Quintet.Runtime.Coordination;

/// <summary>
/// The replicated state of one coordination tool: plain lists (never dictionaries, whose order is not part of the
/// state), so that a snapshot serialises to the same bytes on every replica. Only <see cref="CoordinationState"/> changes it.
/// </summary>
internal sealed class CoordinationData
{
    /// <summary>How many outcomes of votes are kept for members that learn them late (in-doubt participants).</summary>
    public const int OutcomesKept = 1024;

    /// <summary>How many leader changes are kept for members that learn them late.</summary>
    public const int LeaderChangesKept = 256;

    /// <summary>How many barrier releases are kept for arrivals that learn them late.</summary>
    public const int ReleasesKept = 64;

    /// <summary>The replicas (managers) in the current view of the tool's group.</summary>
    public List<string> Replicas { get; set; } = [];

    public long NextOrder { get; set; }

    /// <summary>Voters, candidates or barrier participants, in the order they joined.</summary>
    public List<ParticipantRecord> Participants { get; set; } = [];

    public long Epoch { get; set; }

    public string? LeaderId { get; set; }

    public List<LeaderRecord> LeaderLog { get; set; } = [];

    public long NextProposal { get; set; }

    public List<ProposalRecord> Open { get; set; } = [];

    public long OutcomeCount { get; set; }

    public List<OutcomeRecord> Outcomes { get; set; } = [];

    public long NextToken { get; set; }

    public List<LockRecord> Holders { get; set; } = [];

    public List<LockRecord> Waiting { get; set; } = [];

    public long Generation { get; set; } = 1;

    public int? Expected { get; set; }

    public List<string> Arrived { get; set; } = [];

    public List<string> FailedInGeneration { get; set; } = [];

    public List<BarrierRecord> Releases { get; set; } = [];

    public ParticipantRecord? Participant(string id) => Participants.Find(p => p.Id == id);
}

internal sealed class ParticipantRecord
{
    public string Id { get; set; } = string.Empty;

    public string Replica { get; set; } = string.Empty;

    public string Key { get; set; } = string.Empty;

    public long Order { get; set; }
}

internal sealed class LeaderRecord
{
    public long Epoch { get; set; }

    public string? LeaderId { get; set; }

    public string? LeaderKey { get; set; }
}

internal enum VoterState
{
    Pending,
    Accepted,
    Rejected,
    Failed,
    Absent,
}

internal sealed class VoterRecord
{
    public string Id { get; set; } = string.Empty;

    public string Key { get; set; } = string.Empty;

    public VoterState State { get; set; }

    public string Reason { get; set; } = string.Empty;
}

internal sealed class ProposalRecord
{
    public long Id { get; set; }

    public string Kind { get; set; } = string.Empty;

    public byte[] Payload { get; set; } = [];

    public string ProposerKey { get; set; } = string.Empty;

    public VoteRuleKind Rule { get; set; }

    public int K { get; set; }

    public long DeadlineMs { get; set; }

    /// <summary>The participants it was put to, fixed at its place in the order; absent named keys included.</summary>
    public List<VoterRecord> Voters { get; set; } = [];

    [JsonIgnore]
    public VoteRule VoteRule => new(Rule, K);

    public Proposal ToProposal() => new(Id, Kind, Payload, ProposerKey, VoteRule, DateTimeOffset.FromUnixTimeMilliseconds(Math.Clamp(DeadlineMs, 0, DateTimeOffset.MaxValue.ToUnixTimeMilliseconds())), [.. Voters.Select(v => v.Key).Distinct()]);
}

internal sealed class OutcomeRecord
{
    public long Sequence { get; set; }

    public ProposalRecord Proposal { get; set; } = new();

    public VoteResult Result { get; set; }

    public string Reason { get; set; } = string.Empty;

    public VoteOutcome ToOutcome() => new(
        Proposal.ToProposal(),
        Result,
        [.. Proposal.Voters.Select(v => new Ballot(v.Key, v.State switch
        {
            VoterState.Accepted => BallotState.Accepted,
            VoterState.Rejected => BallotState.Rejected,
            VoterState.Failed => BallotState.Failed,
            VoterState.Absent => BallotState.Absent,
            _ => BallotState.NoAnswer,
        }, v.Reason))],
        Reason);
}

internal sealed class LockRecord
{
    public string Id { get; set; } = string.Empty;

    public string Replica { get; set; } = string.Empty;

    public string Key { get; set; } = string.Empty;

    public LockMode Mode { get; set; }

    public long Token { get; set; }
}

internal sealed class BarrierRecord
{
    public long Generation { get; set; }

    public List<string> Arrived { get; set; } = [];

    public List<string> Failed { get; set; } = [];
}

/// <summary>What a replica asks of the state; one shape for every tool, the operation named by <see cref="Op"/>.</summary>
internal sealed class CoordinationCommand
{
    public const string Join = "join";
    public const string Leave = "leave";
    public const string Propose = "propose";
    public const string Cast = "vote";
    public const string Close = "close";
    public const string Acquire = "acquire";
    public const string Release = "release";
    public const string Arrive = "arrive";

    public string Op { get; set; } = string.Empty;

    /// <summary>The replica that sent it: a command of a replica no longer in the view is refused.</summary>
    public string Origin { get; set; } = string.Empty;

    /// <summary>A participant's, a lock request's id; unique (made of a fresh Guid).</summary>
    public string Id { get; set; } = string.Empty;

    public string Key { get; set; } = string.Empty;

    public string Kind { get; set; } = string.Empty;

    public byte[] Payload { get; set; } = [];

    public VoteRuleKind Rule { get; set; }

    public int K { get; set; }

    public long DeadlineMs { get; set; }

    public List<string>? Named { get; set; }

    public long Proposal { get; set; }

    public bool Accept { get; set; }

    public string Reason { get; set; } = string.Empty;

    public LockMode Mode { get; set; }

    public int? Expected { get; set; }
}

/// <summary>A command's result: an error (nothing changed), or a value (a proposal's id, a barrier's generation).</summary>
internal sealed class CoordinationResult
{
    public string? Error { get; set; }

    public long Value { get; set; }
}

/// <summary>The state's serialisation: JSON of the plain records above, enums by name, no type names.</summary>
internal static class CoordinationJson
{
    public static readonly JsonSerializerOptions Options = new()
    {
        Converters = { new JsonStringEnumConverter() },
        DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    };

    public static byte[] Serialize<T>(T value) => JsonSerializer.SerializeToUtf8Bytes(value, Options);

    public static T Deserialize<T>(ReadOnlySpan<byte> bytes) => JsonSerializer.Deserialize<T>(bytes, Options)
        ?? throw new JsonException($"An empty {typeof(T).Name}.");
}
