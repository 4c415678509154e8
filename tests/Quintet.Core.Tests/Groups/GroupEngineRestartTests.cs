using Quintet.Core.Groups;

namespace Quintet.Core.Tests.Groups;

/// <summary>An engine that replaces a failed one on the same manager (the group's actor restarted) keeps view ids increasing.</summary>
public sealed class GroupEngineRestartTests
{
    [Fact]
    public void An_engine_told_the_views_of_its_predecessor_founds_above_them()
    {
        var first = new ViewRecorder();
        var engine = new GroupEngine("test", new MemberId("sim://n1", 1, 1), new GroupProtocolOptions(), first, first, trace: null);
        engine.Bootstrap(TimeSpan.Zero);
        Assert.Equal(1, Assert.Single(first.Views).Id);

        var restarted = new ViewRecorder();
        var successor = new GroupEngine("test", new MemberId("sim://n1", 1, 2), new GroupProtocolOptions(), restarted, restarted, trace: null);
        successor.RememberViewId(41);
        successor.Bootstrap(TimeSpan.Zero);

        var view = Assert.Single(restarted.Views);
        Assert.Equal(42, view.Id);
        Assert.Equal([successor.Self], view.Members.ToArray());
    }

    private sealed class ViewRecorder : IGroupTransport, IGroupObserver
    {
        public List<GroupView> Views { get; } = [];

        public bool AcceptsDeliveries => true;

        public void Send(MemberId to, Quintet.Core.Groups.Wire.Envelope envelope)
        {
        }

        public void Delivered(Delivery delivery, uint channel)
        {
        }

        public void ViewInstalled(GroupView view) => Views.Add(view);

        public void PrimaryLost(GroupView view)
        {
        }

        public void PrimaryRegained(GroupView view)
        {
        }

        public void Excluded(MemberId next)
        {
        }

        public void Left()
        {
        }
    }
}
