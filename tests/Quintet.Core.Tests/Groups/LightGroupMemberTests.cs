using Akka.Actor;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;

namespace Quintet.Core.Tests.Groups;

public class LightGroupMemberTests
{
    [Fact]
    public async Task The_first_view_stays_when_the_member_loses_its_membership_right_after_joining()
    {
        var member = new LightGroupMember(ActorRefs.Nobody, "g", new LightGroupJoinOptions { SubscribeToViews = true }, 16);
        var observer = (ILightMemberObserver)member;
        var self = new LightMemberId(new MemberId("akka.tcp://q@127.0.0.1:1", 7, 1), 1);
        var first = new LightGroupView("g", 1, [new LightGroupMemberInfo(self, "manager")]);

        // The join completes and, before its caller looks, the manager is excluded (as after a pause the others outlived).
        observer.ViewInstalled(first);
        observer.Rejoining(self with { Host = self.Host with { Incarnation = 2 } });
        await member.Joined;

        Assert.Null(member.View);
        Assert.Same(first, member.FirstView);
        Assert.True(member.Events.TryRead(out var installed));
        Assert.Same(first, Assert.IsType<LightViewInstalled>(installed).View);
        Assert.True(member.Events.TryRead(out var rejoining));
        Assert.IsType<LightMemberRejoining>(rejoining);
    }
}
