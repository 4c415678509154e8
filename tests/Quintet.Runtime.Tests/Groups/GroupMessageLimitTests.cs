using Quintet.Core.Groups;
using Quintet.Tests;

namespace Quintet.Runtime.Tests.Groups;

/// <summary>
/// A group message travels whole in one frame, so one too long for any frame is refused when it is sent, with the limit
/// in the message, and the group goes on; a message that could never be delivered would otherwise be retransmitted
/// for good.
/// </summary>
public sealed class GroupMessageLimitTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(1);

    [Fact]
    public async Task A_heavyweight_group_refuses_a_payload_over_its_limit_and_sends_the_next()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var group = manager.Groups.Join("limit-" + Guid.NewGuid().ToString("N"));
        await Eventually.TrueAsync(() => group.View is not null, Bound, "the group's first view", timeout.Token);

        var refused = await Assert.ThrowsAsync<ArgumentException>(() => group.MulticastAsync(new byte[GroupMessageLimits.MaxPayloadBytes + 1], MessageOrdering.Total, timeout.Token));
        Assert.Contains($"at most {GroupMessageLimits.MaxPayloadBytes} bytes", refused.Message, StringComparison.Ordinal);
        await group.MulticastAsync(new byte[GroupMessageLimits.MaxPayloadBytes], MessageOrdering.Total, timeout.Token);
    }

    [Fact]
    public async Task A_light_group_refuses_a_payload_over_its_limit_and_sends_the_next()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var member = await manager.Groups.JoinLightGroupAsync("limit-" + Guid.NewGuid().ToString("N"), cancellationToken: timeout.Token);
        var refused = await Assert.ThrowsAsync<ArgumentException>(() => member.MulticastAsync(new byte[GroupMessageLimits.MaxLightPayloadBytes + 1], MessageOrdering.Total, cancellationToken: timeout.Token));
        Assert.Contains($"at most {GroupMessageLimits.MaxLightPayloadBytes} bytes", refused.Message, StringComparison.Ordinal);
        await member.MulticastAsync(new byte[GroupMessageLimits.MaxLightPayloadBytes], MessageOrdering.Total, cancellationToken: timeout.Token);
    }
}
