using Quintet.Components;

namespace Samples.Presence;

/// <summary>
/// The participants' class factory: a member of their ClassGroup on every manager, it follows who is there (the
/// participants that joined, and the factories of the other managers). Participants on this manager read what it saw.
/// </summary>
public sealed class PresenceFactory : ClassFactory<PresenceComponent>
{
    private static GroupViewChange? s_lastView;

    /// <summary>The last ClassGroup view this manager's factory saw; null before the first.</summary>
    public static GroupViewChange? LastView => Volatile.Read(ref s_lastView);

    /// <inheritdoc />
    public override Task OnClassGroupViewAsync(GroupViewChange view, CancellationToken cancellationToken)
    {
        Volatile.Write(ref s_lastView, view);
        return Task.CompletedTask;
    }
}
