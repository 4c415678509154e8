using Quintet.Core.Groups.Tracing;
using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

// Who is in the next view: suspicions, join and leave requests, the stale member told to rejoin, and exclusion.
internal sealed partial class GroupEngine
{
    /// <summary>
    /// Marks the members of the current view that run on the given manager incarnation as suspected. Within a view,
    /// suspicion only grows: a suspected member never enters the next view (it may rejoin as a new incarnation).
    /// </summary>
    public void SuspectNode(string node, long uid, TimeSpan now)
    {
        _now = now;

        // A joiner on that manager incarnation asks again if it lives; one that died must not enter the next view, where
        // nothing would suspect it once a new incarnation answers at its address (a fault workload found such a ghost).
        _joiners.RemoveAll(j => j.Node == node && j.Uid == uid);
        if (_view is null)
        {
            return;
        }

        foreach (var member in _view.Members.Where(m => m.Node == node && m.Uid == uid && m != _self))
        {
            Suspect(member);
        }

        AfterInput();
    }

    /// <summary>
    /// The cluster says the manager incarnation <paramref name="node"/>, <paramref name="uid"/> is leaving it (Leaving or
    /// Exiting): none of its members enters a view from now on, and one waiting to be admitted is dropped. Such a manager
    /// is gone within moments, and a member it started now (something on it asked for the group after it had left it as
    /// it stopped) would never be made to leave again: its removal would count as a failure, and in a view of two it
    /// would leave the other on a minority side. Members of that manager already in the view are not touched: they leave
    /// in a view change they take part in, or are suspected when the cluster removes their manager.
    /// </summary>
    public void NodeLeaving(string node, long uid, TimeSpan now)
    {
        _now = now;
        if (!_departingNodes.Add((node, uid)) || _joiners.RemoveAll(j => j.Node == node && j.Uid == uid) == 0)
        {
            return;
        }

        if (_round is not null && IsLeader && _round.Next.Members.Any(m => m.Node == node && m.Uid == uid && !_view!.Contains(m)))
        {
            // The round would admit the joiner: start over without it, as for a suspect.
            StartRound();
        }
        else if (_round is null && _suspects.Count == 0 && _joiners.Count == 0 && _leavers.Count == 0)
        {
            // Nothing is wanted any more: the next change gets a batch window of its own.
            _changeWantedSince = null;
        }

        AfterInput();
    }

    /// <summary>
    /// The cluster removed the manager incarnation <paramref name="node"/>, <paramref name="uid"/>: its members are
    /// suspected, as by <see cref="SuspectNode"/>, and it is no longer remembered as leaving (it cannot ask to join any
    /// more: its host refuses whatever a removed manager sends).
    /// </summary>
    public void NodeRemoved(string node, long uid, TimeSpan now)
    {
        _departingNodes.Remove((node, uid));
        SuspectNode(node, uid, now);
    }

    /// <summary>Whether this member suspects <paramref name="member"/> in the current view.</summary>
    public bool IsSuspected(MemberId member) => _suspects.Contains(member);

    /// <summary>
    /// Certain evidence that the manager incarnation <paramref name="node"/>, <paramref name="uid"/> no longer runs (its
    /// connection closed and its port refuses connections on a host whose answer is trusted): its members are suspected,
    /// and this member's promises say so, so that the view leaving them out waits for no lease of theirs. A process that
    /// does not exist serves nothing, whatever its lease said.
    /// </summary>
    public void ProcessDied(string node, long uid, TimeSpan now)
    {
        _now = now;
        var alreadySuspected = NoteDead(node, uid) && _suspects.Any(s => s.Node == node && s.Uid == uid);

        SuspectNode(node, uid, now);
        if (alreadySuspected && _view is not null && !_primaryLost && !IsLeader)
        {
            // The leader learns of the death too, and need not gather other suspicions for the full batch window.
            ReportSuspects();
        }
    }

    /// <summary>
    /// Records the evidence that the process <paramref name="node"/>, <paramref name="uid"/> is dead, when it hosts a
    /// member of the view other than this one (this member's own death is never taken from anyone). True when it is new.
    /// </summary>
    private bool NoteDead(string node, long uid) =>
        _view is not null && _view.Members.Any(m => m.Node == node && m.Uid == uid && m != _self) && _deadProcesses.Add((node, uid));

    private void Suspect(MemberId member)
    {
        if (_view is null || !_view.Contains(member) || member == _self || !_suspects.Add(member))
        {
            return;
        }

        _changeWantedSince ??= _now;
        if (Needed().Count < _view.Majority)
        {
            // Every member, not only the leader, stops on a minority side: none of them may deliver or send on.
            LosePrimary();
            return;
        }

        if (_round is not null && IsLeader)
        {
            // The round's next view would hold a suspect: start over without it, now rather than at the phase timeout.
            StartRound();
        }
        else if (!IsLeader)
        {
            ReportSuspects();
        }
    }

    /// <summary>Tells the leader (as this member sees it) whom this member suspects.</summary>
    private void ReportSuspects()
    {
        var leader = _view!.Members.First(m => !_suspects.Contains(m));
        var report = new SuspectReport();
        report.Suspects.AddRange(_suspects.Select(s => s.ToWire()));
        report.Dead.AddRange(_suspects.Where(s => _deadProcesses.Contains((s.Node, s.Uid))).Select(s => s.ToWire()));
        Post(leader, new Envelope { SuspectReport = report });
    }

    private bool IsLeader => _view is not null && _view.Members.First(m => !_suspects.Contains(m)) == _self;

    private void OnJoinRequest(MemberId joiner, long round)
    {
        if (_view is null)
        {
            AnswerNoView(joiner, round);
            return;
        }

        if (_view.Contains(joiner) || _joiners.Contains(joiner))
        {
            return;
        }

        // A new incarnation of a member supersedes the old one, which can no longer be alive in the group.
        foreach (var older in _view.Members.Where(m => m.Node == joiner.Node && m != joiner))
        {
            Suspect(older);
        }

        if (_departingNodes.Contains((joiner.Node, joiner.Uid)))
        {
            // Its manager is leaving the cluster (see NodeLeaving).
            return;
        }

        _joiners.Add(joiner);
        _changeWantedSince ??= _now;
    }

    private void OnStale(Envelope envelope)
    {
        NoteViewId(envelope.Stale.CurrentViewId);
        if (_view is not null && envelope.Stale.CurrentViewId > _view.Id)
        {
            Exclude();
        }
    }

    /// <summary>
    /// Leaves the group: the leader runs a view change in which this member still takes part, so that its messages
    /// are flushed, and which installs a view without it. <see cref="IGroupObserver.Left"/> tells when it is done.
    /// </summary>
    public void Leave(TimeSpan now)
    {
        _now = now;
        if (_leaving)
        {
            return;
        }

        _leaving = true;

        // On a minority side nothing more can be delivered here, and no view change can run without the majority:
        // waiting for it would only hold the manager's stop until the minority timeout. The others see a failure.
        if (_view is null || _view.Members.Length == 1 || _primaryLost)
        {
            Exclude();
            return;
        }

        RequestLeave();
    }

    private void RequestLeave()
    {
        _leaveRequestedAt = _now;
        var leader = _view!.Members.First(m => !_suspects.Contains(m));
        if (leader == _self)
        {
            OnLeaveRequest(_self);
        }
        else
        {
            Post(leader, new Envelope { LeaveRequest = new LeaveRequest() });
        }
    }

    private void OnLeaveRequest(MemberId from)
    {
        if (_view is not null && _view.Contains(from) && _leavers.Add(from))
        {
            _changeWantedSince ??= _now;
        }
    }

    /// <summary>This incarnation is out of the group: forget everything and rejoin as the next incarnation (or, when it
    /// asked to leave, stop).</summary>
    private void Exclude()
    {
        var leftView = _view?.Id ?? 0;
        _view = null;
        _rank = -1;
        _streams = [];
        _queuedSends.Clear();
        _futureEnvelopes.Clear();
        ResetViewChange();
        _lastCommit = null;
        if (_leaving)
        {
            _trace?.Record(new GroupTraceEvent(_self.ToString(), GroupTraceKind.Leave, leftView, null, null, 0, null, _group));
            _observer.Left();
            return;
        }

        _self = _self.NextIncarnation();
        _completeRounds = 0;

        // Joiners asked the view this member was in; if they live they ask again, and whoever holds a view admits them.
        _joiners.Clear();
        _observer.Excluded(_self);
        SendJoinRequest();
    }
}
