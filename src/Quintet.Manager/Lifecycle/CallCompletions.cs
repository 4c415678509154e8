using System.Globalization;
using Grpc.Core;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Exactly-once calls on the owner, in the instance's turn: before a recorded call runs, its record is looked up (a
/// retry of a call that ran gets the answer recorded then, and runs nothing); after it ran, its answer is recorded and
/// sent to the backups the state it wrote went to before the caller gets it, and to its checkpoint stream with the
/// stream's next write. The records an instance arrived with (migrated, promoted from a backup) are taken in when it
/// is activated, before its first lookup.
/// </summary>
internal sealed class CallCompletions(CompletionRecordBook book, InstanceMigration migration, PrimaryBackups backups)
{
    public CompletionRecordBook Book => book;

    /// <summary>
    /// Takes in the records an instance not yet activated here came with: from the old owner when it migrated, or from
    /// the backup kept here when this manager is to be promoted. Only those of the state it will start from.
    /// </summary>
    public void TakeInArrived(Shadow shadow)
    {
        if (shadow.Instance is not null)
        {
            return;
        }

        if (migration.TakeArrivedCompletions(shadow.Id, shadow.Epoch) is { } arrived)
        {
            (shadow.Completions ??= new InstanceCompletions(book)).Merge(arrived);
        }
        else if (!shadow.WasActivated && backups.TryPeekCopy(shadow.Id, out var copy) && copy.Epoch < shadow.Epoch && copy.Completions is { } kept)
        {
            (shadow.Completions ??= new InstanceCompletions(book)).Merge(kept);
        }
    }

    /// <summary>
    /// The recorded answer of <paramref name="call"/> if it ran before (its reply's bytes; an error answer is thrown),
    /// or null: the call runs.
    /// </summary>
    /// <exception cref="InvocationException">The recorded answer was an error (its status and message), the call's
    /// answer was lost with the manager that ran it (<c>DATA_LOSS</c>), or its record was dropped (<c>FAILED_PRECONDITION</c>).</exception>
    public static byte[]? Replay(Shadow shadow, ClientCallId call, long answeredBelow, string operation)
    {
        if (shadow.Completions is not { } completions)
        {
            return null;
        }

        switch (completions.Find(call, answeredBelow, out var record))
        {
            case CompletionLookup.Recorded:
                CompletionRecordBook.CountReplayed();
                return record!.Status == StatusCode.OK ? record.Reply ?? [] : throw new InvocationException(record.Status, record.Detail ?? string.Empty);
            case CompletionLookup.AnswerLost:
                throw new InvocationException(StatusCode.DataLoss, string.Create(CultureInfo.InvariantCulture, $"Call {call.Sequence} of client {call.ClientId} ({operation}) was applied to {shadow.Id}, but its answer was lost with the manager that ran it, which failed after the state it wrote reached the instance's backups or checkpoint and before its answer did. It is not run again: read the instance's state to learn its outcome."));
            case CompletionLookup.Dropped:
                throw new InvocationException(StatusCode.FailedPrecondition, string.Create(CultureInfo.InvariantCulture, $"Call {call.Sequence} of client {call.ClientId} ({operation}) on {shadow.Id} may have run already and its completion record is gone: the client acknowledged its answer, or the records reached a bound (Quintet:CompletionRecords). It is not run again."));
            default:
                return null;
        }
    }

    /// <summary>
    /// Records a call's answer in its turn and sends it where the state the call wrote went, before the caller gets it:
    /// a retry then gets this answer, here or on a manager that takes the instance over from that state.
    /// </summary>
    public async Task RecordAsync(Shadow shadow, ClientCallId call, StatusCode status, string? detail, byte[]? reply, CancellationToken cancellationToken)
    {
        var record = new CompletionRecord(call.Sequence, status, status == StatusCode.OK ? null : detail, status == StatusCode.OK ? reply : null, Pending: false);
        (shadow.Completions ??= new InstanceCompletions(book)).Add(call.ClientId, record);
        shadow.RunningCall = null;
        if (shadow.WroteCheckpointInCall)
        {
            // The stream holds the call's effect marked pending; its next write carries the answer.
            var unwritten = shadow.UnwrittenAnswers ??= [];
            lock (unwritten)
            {
                unwritten.Add((call.ClientId, record));
            }
        }

        await backups.SendAnswerAsync(shadow, cancellationToken);
    }
}
