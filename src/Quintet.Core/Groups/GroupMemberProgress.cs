namespace Quintet.Core.Groups;

/// <summary>
/// What one member of a group still has in flight, as its group actor sees it when asked: a test that checks the
/// group's traces waits until every member reports a view in common, nothing blocked, nothing unstable and nothing
/// waiting, since a trace read with messages in flight shows sends that nobody has delivered yet.
/// </summary>
/// <param name="View">The member's view; null while it joins or rejoins.</param>
/// <param name="Blocked">A view change, or a lost majority, holds its deliveries and sends.</param>
/// <param name="UnstableEntries">Entries of the view held here that some member has not processed yet, as far as this
/// member knows (see <c>GroupEngine.UnstableEntries</c>).</param>
/// <param name="WaitingSends">Sends not in the protocol yet: waiting for credit, for a view change to end, or (light
/// groups) for a flush, a join or a leave to take effect.</param>
public sealed record GroupMemberProgress(GroupView? View, bool Blocked, long UnstableEntries, int WaitingSends);
