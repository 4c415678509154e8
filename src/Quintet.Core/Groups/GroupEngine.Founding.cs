using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// Founding the group again. A member that holds no view answers a join request with <see cref="NoView"/>; a member in a
/// view, even a blocked or minority one, never does. A joining member that its host says may found (the oldest manager,
/// with every other manager reachable) founds the group alone, in a view whose id is above every id it heard of, once
/// every manager it asks answered "no view" in two consecutive rounds of join requests, with the same managers asked in
/// both. So while any manager it can reach holds a view — which it would join — nothing is founded, and when none does
/// (every primary member died and the survivors excluded themselves), the group comes back instead of every manager
/// waiting to join a group nobody holds. What the old views held in memory is lost, as at a whole-cluster restart.
/// </summary>
internal sealed partial class GroupEngine
{
    /// <summary>Consecutive rounds in which every contact must answer "no view" before this member founds.</summary>
    private const int FoundingRounds = 2;

    private readonly HashSet<(string Node, long Uid)> _noViewAnswers = [];
    private long _joinRound;
    private bool _joinRoundComplete;
    private int _completeRounds;
    private long _highestViewId;
    private bool _mayFound;

    /// <summary>
    /// Updates the members a joining member asks (the managers it currently knows) and whether it may found the group
    /// again when all of them answer that they hold no view: the host allows it only for the oldest manager, and only
    /// while it can reach every manager.
    /// </summary>
    public void UpdateJoinContacts(IReadOnlyCollection<MemberId> contacts, bool mayFound)
    {
        static (string, long) Key(MemberId m) => (m.Node, m.Uid);
        if (mayFound != _mayFound || !contacts.Select(Key).ToHashSet().SetEquals(_joinContacts.Select(Key)))
        {
            // The answers so far were to another question: count rounds afresh.
            _completeRounds = 0;
        }

        _joinContacts = contacts;
        _mayFound = mayFound;
    }

    /// <summary>
    /// Tells a new engine the highest view id an earlier incarnation of this member installed (its host survived, the
    /// engine did not): a view it founds or is told of comes after it, so view ids keep increasing at this member.
    /// </summary>
    public void RememberViewId(long viewId) => NoteViewId(viewId);

    private void NoteViewId(long viewId) => _highestViewId = Math.Max(_highestViewId, viewId);

    /// <summary>A member that holds no view tells a joiner so; one that leaves for good stays silent.</summary>
    private void AnswerNoView(MemberId joiner, long round)
    {
        if (!_leaving)
        {
            Post(joiner, new Envelope { NoView = new NoView { Round = round, HighestViewId = _highestViewId } });
        }
    }

    /// <summary>Starts a round of join requests; a round that did not hear "no view" from every contact breaks the count.</summary>
    private void StartJoinRound()
    {
        if (!_joinRoundComplete)
        {
            _completeRounds = 0;
        }

        _joinRound++;
        _joinRoundComplete = false;
        _noViewAnswers.Clear();
    }

    private void OnNoView(MemberId from, NoView answer)
    {
        if (_view is not null || answer.Round != _joinRound)
        {
            return;
        }

        NoteViewId(answer.HighestViewId);
        _noViewAnswers.Add((from.Node, from.Uid));
        CheckJoinRound();
    }

    private void CheckJoinRound()
    {
        if (_joinRoundComplete || _view is not null || !_joinContacts.Where(c => c.Node != _self.Node || c.Uid != _self.Uid).All(c => _noViewAnswers.Contains((c.Node, c.Uid))))
        {
            return;
        }

        _joinRoundComplete = true;
        _completeRounds++;
        if (_mayFound && _completeRounds >= FoundingRounds && !_leaving)
        {
            Found();
        }
    }

    /// <summary>
    /// Founds the group alone, in a view above every id this member knows of, so that view ids keep increasing (light
    /// groups derive theirs from them). A member of an older view that this member could not ask may still believe it
    /// holds its primary lease: nothing it owned is taken over before that lease could have run out.
    /// </summary>
    private void Found()
    {
        _formerLeaseExpiry = _now + LongestLease(_options);
        Install(new GroupView(_highestViewId + 1, [_self]), founded: true);
    }
}
