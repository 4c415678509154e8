using Microsoft.Extensions.Logging;

namespace Quintet.Runtime.Replication;

/// <summary>The machine's log messages (a generic type cannot hold them).</summary>
internal static partial class ReplicatedStateMachineLog
{
    [LoggerMessage(Level = LogLevel.Error, Message = "Replicated state '{Machine}': this replica stopped, its state threw while applying, capturing or restoring")]
    public static partial void LoopFailed(ILogger logger, Exception exception, string machine);
}
