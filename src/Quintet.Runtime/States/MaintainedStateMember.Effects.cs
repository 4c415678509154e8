using Quintet.Components;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.States;

// Carrying out what the bookkeeping decides: the effects that concern this member.
public sealed partial class MaintainedStateMember
{
    /// <summary>
    /// Takes an effect as the book decides it, under the machine's lock on its loop (so that an installation is queued
    /// before anyone can see its effect on the book, <see cref="HasState"/> for one); it only queues work.
    /// </summary>
    private void OnEffect(StateEffect effect)
    {
        lock (_effectsGate)
        {
            if (_joined is null)
            {
                // Decided while the machine joins (the commands after its snapshot): carried out once it is known.
                _early.Add(effect);
                return;
            }

            Carry(effect);
        }
    }

    private void Carry(StateEffect effect)
    {
        // Effects name members by id: one decided for this replica's former identity (before a rejoin) is not its own.
        var self = SelfId;
        switch (effect)
        {
            case InstallDue install when install.Recipients.Contains(self):
                Install(install, self);
                break;
            case JoinTransferDue join when join.Primary == self:
                Enqueue(async cancellationToken =>
                {
                    // Exported and sent in the turn, so that no later transfer of this member overtakes it.
                    var state = await _component.ExportStateAsync(cancellationToken);
                    await SendStateAsync(self, Guid.NewGuid().ToString("N"), StateTransferKind.Join, state, join.Targets, cancellationToken);
                    LogJoinTransfer(Name, state.Length, join.Targets.Count);
                });
                break;
            case AutomaticTransferDue due when due.Member == self:
                Enqueue(async cancellationToken =>
                {
                    var state = await _component.ExportStateAsync(cancellationToken);
                    await SendStateAsync(self, Guid.NewGuid().ToString("N"), StateTransferKind.Automatic, state, [], cancellationToken);
                });
                break;
            case TransferAcknowledged acknowledged when acknowledged.Sender == self:
                lock (_gate)
                {
                    _acks.GetValueOrDefault(acknowledged.Transfer)?.TrySetResult();
                }

                break;
            case MalformedCommand malformed:
                LogMalformed(Name, malformed.Error);
                break;
        }
    }

    private void Install(InstallDue install, string self)
    {
        var (kind, from, state) = (install.Kind, install.From, install.State);
        Enqueue(cancellationToken => kind == StateTransferKind.Automatic && _component is IMergeState merging
            ? merging.MergeStateAsync(state, from, cancellationToken)
            : _component.ImportStateAsync(state, cancellationToken));
        if (kind == StateTransferKind.Manual && from.Id != self)
        {
            // Received whole, and queued to be installed in order: the sender may go on.
            Quietly(new StateCommand { Ack = new StateAck { Transfer = install.Transfer } });
        }
    }

    /// <summary>Executes <paramref name="command"/> off the machine's loop (whose lock the caller may hold), not awaited.</summary>
    private void Quietly(StateCommand command) => _ = Task.Run(() => QuietlyAsync(command));

    private async Task QuietlyAsync(StateCommand command)
    {
        try
        {
            await ExecuteAsync(command, CancellationToken.None);
        }
        catch (InvalidOperationException e)
        {
            // Left, or rejoining: the others no longer count on this member, and once back it announces itself again.
            LogNotSent(Name, command.KindCase.ToString(), e.Message);
        }
    }
}
