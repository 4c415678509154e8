using Quintet.Core.Groups;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Replication;

// Applying: commands in the total order, synchronously under the lock or, for an ordered asynchronous state, awaited
// one at a time on the loop; and what a replica does when it loses its membership.
public sealed partial class ReplicatedStateMachine<TState>
    where TState : class
{
    private ValueTask OnCommandAsync(RsmCommand command)
    {
        lock (_gate)
        {
            if (!_isSynced)
            {
                _buffered.Add((_view?.Id ?? 0, command, null));
                return ValueTask.CompletedTask;
            }
        }

        return ApplyAsync(command);
    }

    private ValueTask ApplyAsync(RsmCommand command)
    {
        if (_async is not null)
        {
            return ApplyInOrderAsync(command, _async);
        }

        Apply(command, _sync!);
        return ValueTask.CompletedTask;
    }

    /// <summary>
    /// Applies a command of an ordered asynchronous state: awaited here, on the loop, so the next command starts only
    /// once this one completed, at every replica alike.
    /// </summary>
    private async ValueTask ApplyInOrderAsync(RsmCommand command, IAsyncReplicatedState state)
    {
        TaskCompletionSource<byte[]>? waiting = null;
        lock (_gate)
        {
            _position++;
            if (command.Origin == OwnOrigin)
            {
                _pending.TryGetValue(command.Request, out waiting);
            }
        }

        var result = command.Body.IsEmpty ? [] : await state.ApplyAsync(command.Body.Memory, _stop.Token);
        if (!command.Body.IsEmpty)
        {
            Applied?.Invoke(command.Body.Memory, result);
        }

        if (waiting is not null)
        {
            _resumptions.Add(CallerResumption.Succeeded(waiting, result));
        }
    }

    private void Apply(RsmCommand command, IReplicatedState state)
    {
        byte[] result;
        TaskCompletionSource<byte[]>? waiting = null;
        lock (_gate)
        {
            _position++;
            result = command.Body.IsEmpty ? [] : state.Apply(command.Body.Span);
            if (command.Origin == OwnOrigin)
            {
                _pending.TryGetValue(command.Request, out waiting);
            }

            if (_durable is not null)
            {
                OnAppliedDurably(command, result, ref waiting);
            }
        }

        if (!command.Body.IsEmpty)
        {
            Applied?.Invoke(command.Body.Memory, result);
        }

        if (waiting is not null)
        {
            _resumptions.Add(CallerResumption.Succeeded(waiting, result));
        }
    }

    private void OnRejoining()
    {
        List<TaskCompletionSource<byte[]>> failed;
        lock (_gate)
        {
            // Excluded: the others went on without this replica. It gets the state anew as a newcomer.
            _isSynced = false;
            _view = null;
            _buffered.Clear();
            _synced.Clear();
            _server.Clear();
            _receiver.Dispose();
            failed = [.. _pending.Values];
        }

        ResumeSendingAfterRejoin();
        MembershipLost?.Invoke();

        foreach (var waiting in failed)
        {
            _resumptions.Add(CallerResumption.Failed(waiting, new GroupUnavailableException($"The replica of '{Name}' lost its membership before the command was applied; it may or may not have been.")));
        }
    }
}
