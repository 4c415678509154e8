using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>Carries envelopes between members; FIFO per pair of members while both live, as TCP is.</summary>
internal interface IGroupTransport
{
    void Send(MemberId to, Envelope envelope);
}

/// <summary>What a group member tells its application.</summary>
internal interface IGroupObserver
{
    /// <summary>A message was delivered, on <paramref name="channel"/> (0 the application, 1 light groups).</summary>
    void Delivered(Delivery delivery, uint channel);

    void ViewInstalled(GroupView view);

    /// <summary>False while the application has too many deliveries still to read: normal delivery pauses.</summary>
    bool AcceptsDeliveries { get; }

    /// <summary>This member is on a minority side: it delivers nothing and cannot send until it rejoins.</summary>
    void PrimaryLost(GroupView view);

    /// <summary>
    /// This member, on a minority side of <paramref name="view"/> because it suspected members that then spoke again in
    /// that view, counts a majority once more: it delivers and sends again, in the same view.
    /// </summary>
    void PrimaryRegained(GroupView view);

    /// <summary>This member was excluded from the group's newer view; it rejoins as <paramref name="next"/>.</summary>
    void Excluded(MemberId next);

    /// <summary>This member left the group, as it asked: it is in no view and sends and delivers nothing more.</summary>
    void Left();
}
