using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

// The sending side: commands wait in a queue and leave in batches, with a bounded number of messages in flight.
public sealed partial class ReplicatedStateMachine<TState>
    where TState : class
{
    private const int MaxBatchCommands = 1024;
    private const int MaxBatchBytes = 64 * 1024;

    private const int MaxCommandBytes = ReplicatedStateMachine.MaxCommandBytes;
    private const int MaxMessagesInFlight = 2;
    private readonly Lock _sendGate = new();
    private readonly Queue<WaitingCommand> _waiting = new();
    private bool _sending;
    private int _inFlight;
    private long _messagesSent;

    /// <summary>Total-order messages that carried this replica's commands (one per batch), for diagnostics and tests.</summary>
    internal long CommandMessagesSent => Interlocked.Read(ref _messagesSent);

    /// <summary>
    /// Orders <paramref name="command"/> and returns its result once this replica applied it. Commands that callers on
    /// this replica issue while an earlier one is going out travel together in one total-order message, each applied
    /// at its own place and with its own result; a command refused by the state (a result saying so) affects no other.
    /// </summary>
    /// <exception cref="GroupUnavailableException">This replica lost its membership, or was disposed, before the command was applied; it may or may not have been.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled: the command may or may not be applied (never, if it had not gone out yet).</exception>
    /// <exception cref="ArgumentException">The command is over <see cref="ReplicatedStateMachine.MaxCommandBytes"/>; it was not sent.</exception>
    public Task<byte[]> ExecuteAsync(ReadOnlyMemory<byte> command, CancellationToken cancellationToken = default) =>
        ExecuteBytesAsync(ByteString.CopyFrom(command.Span), cancellationToken);

    /// <summary>
    /// <see cref="ExecuteAsync(ReadOnlyMemory{byte}, CancellationToken)"/> for a command already in immutable bytes (the
    /// shared structures serialize theirs straight into one), so that it is not copied once more.
    /// </summary>
    internal Task<byte[]> ExecuteMessageAsync(IMessage command, CancellationToken cancellationToken) =>
        ExecuteBytesAsync(WireBytes.ToByteString(command), cancellationToken);

    private async Task<byte[]> ExecuteBytesAsync(ByteString command, CancellationToken cancellationToken)
    {
        if (command.Length > MaxCommandBytes)
        {
            // Refused here: in the sending loop it would stop every command behind it.
            throw new ArgumentException(
                $"Replicated state '{Name}' refused a command of {command.Length} bytes: a command travels whole in one group message and carries at most {MaxCommandBytes} bytes ({MaxCommandBytes / (1024.0 * 1024):0.##} MiB). Nothing was sent or changed.",
                nameof(command));
        }

        var request = Interlocked.Increment(ref _nextRequest);
        // Completed only through CallerResumptions: continuations inline, on a work item shared with other callers.
        var done = new TaskCompletionSource<byte[]>();
        lock (_gate)
        {
            _pending[request] = done;
        }

        try
        {
            bool start;
            lock (_sendGate)
            {
                _waiting.Enqueue(new WaitingCommand(new RsmCommand { Request = request, Body = command }, done, cancellationToken));
                start = TryStartSending();
            }

            if (start)
            {
                _ = SendWaitingAsync();
            }

            return await done.Task.WaitAsync(cancellationToken);
        }
        finally
        {
            lock (_gate)
            {
                _pending.Remove(request);
            }
        }
    }

    /// <summary>Under <see cref="_sendGate"/>: true when the caller is to start <see cref="SendWaitingAsync"/>.</summary>
    private bool TryStartSending()
    {
        if (_sending || _inFlight >= MaxMessagesInFlight || _waiting.Count == 0)
        {
            return false;
        }

        _sending = true;
        return true;
    }

    /// <summary>
    /// Multicasts the commands waiting at this replica, one total-order message at a time and with at most
    /// <see cref="MaxMessagesInFlight"/> of them not yet delivered back here: commands that arrive meanwhile leave
    /// together in the next message (a batch), so that under load one message, one order slot and one delivery carry
    /// many commands, while a lone command goes out at once. Commands keep the order in which they were queued.
    /// </summary>
    private async Task SendWaitingAsync()
    {
        while (true)
        {
            List<WaitingCommand> batch = [];
            lock (_sendGate)
            {
                if (_inFlight >= MaxMessagesInFlight)
                {
                    // Delivery of an earlier message starts sending again (OnOwnMessageDelivered).
                    _sending = false;
                    return;
                }

                var bytes = 0;
                while (_waiting.TryPeek(out var next) && batch.Count < MaxBatchCommands && (batch.Count == 0 || bytes + next.Command.Body.Length <= MaxBatchBytes))
                {
                    _waiting.Dequeue();
                    if (next.Cancellation.IsCancellationRequested || next.Done.Task.IsCompleted)
                    {
                        // Its caller stopped waiting, or was told the replica lost its membership, before it went out:
                        // it is never applied.
                        CallerResumptions.Schedule(CallerResumption.Cancelled(next.Done, next.Cancellation));
                        continue;
                    }

                    batch.Add(next);
                    bytes += next.Command.Body.Length;
                }

                if (batch.Count == 0)
                {
                    if (_waiting.Count == 0)
                    {
                        _sending = false;
                        return;
                    }

                    continue;
                }

                // Counted before it goes out: its delivery here can come before MulticastAsync returns.
                _inFlight++;
            }

            var origin = OwnOrigin;
            RsmMessage message;
            if (batch.Count == 1)
            {
                batch[0].Command.Origin = origin;
                message = new RsmMessage { Command = batch[0].Command };
            }
            else
            {
                var commands = new RsmCommandBatch { Origin = origin };
                commands.Commands.AddRange(batch.Select(c => c.Command));
                message = new RsmMessage { Batch = commands };
            }

            try
            {
                await _member.MulticastAsync(WireBytes.ToArray(message), MessageOrdering.Total, cancellationToken: _stop.Token);
                Interlocked.Increment(ref _messagesSent);
                CommandBatchMetrics.Batch.Record(batch.Count);
            }
            catch (Exception e) when (e is GroupUnavailableException or OperationCanceledException or ObjectDisposedException)
            {
                lock (_sendGate)
                {
                    _inFlight = Math.Max(0, _inFlight - 1);
                }

                var failure = e as GroupUnavailableException
                    ?? new GroupUnavailableException($"The replica of '{Name}' was disposed before the command went out; it was not applied.");
                CallerResumptions.Schedule([.. batch.Select(waiting => CallerResumption.Failed(waiting.Done, failure))]);
            }
        }
    }

    /// <summary>A message this replica sent is delivered: the next batch may go out.</summary>
    private void OnOwnMessageDelivered(string origin)
    {
        if (origin != OwnOrigin)
        {
            return;
        }

        bool start;
        lock (_sendGate)
        {
            _inFlight = Math.Max(0, _inFlight - 1);
            start = TryStartSending();
        }

        if (start)
        {
            _ = SendWaitingAsync();
        }
    }

    /// <summary>After a rejoin: what it sent under its former identity will never be delivered as its own.</summary>
    private void ResumeSendingAfterRejoin()
    {
        bool start;
        lock (_sendGate)
        {
            _inFlight = 0;
            start = TryStartSending();
        }

        if (start)
        {
            _ = SendWaitingAsync();
        }
    }

    private sealed record WaitingCommand(RsmCommand Command, TaskCompletionSource<byte[]> Done, CancellationToken Cancellation);
}
