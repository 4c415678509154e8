using Microsoft.Extensions.Logging;

namespace Quintet.Runtime.Replication;

/// <summary>The machine's log messages (a generic type cannot hold them).</summary>
internal static partial class ReplicatedStateMachineLog
{
    [LoggerMessage(Level = LogLevel.Error, Message = "Replicated state '{Machine}': this replica stopped, its state threw while applying, capturing or restoring")]
    public static partial void LoopFailed(ILogger logger, Exception exception, string machine);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Replicated state '{Machine}': none of the {Replicas} replicas of view {View} has the state (those that had it left before they served the others); {Founder} founds it anew, from what it held before: {FromHeld}. What only the departed replicas had applied is lost")]
    public static partial void StateLost(ILogger logger, string machine, long view, int replicas, string founder, bool fromHeld);
}
