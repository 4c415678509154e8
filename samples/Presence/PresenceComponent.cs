using System.Text;
using Quintet.Components;

namespace Samples.Presence;

/// <summary>
/// A participant: it joins its ClassGroup when asked, multicasts what it says in total order (so every participant
/// hears everything in the same order) and keeps what it hears and who it sees leave. Group deliveries arrive in the
/// instance's turn, like calls: no locks.
/// </summary>
public sealed class PresenceComponent : Component, IPresence
{
    private readonly List<string> _heard = [];
    private readonly List<string> _left = [];
    private IComponentGroup? _group;

    /// <inheritdoc />
    public async Task<Participants> JoinAsync(JoinRequest request, CancellationToken cancellationToken)
    {
        _group ??= await Context.Groups.ClassGroupAsync(cancellationToken);
        return Current();
    }

    /// <inheritdoc />
    public async Task<Participants> SayAsync(Saying request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _group ??= await Context.Groups.ClassGroupAsync(cancellationToken);
        await _group.MulticastAsync(Encoding.UTF8.GetBytes(request.Text), totalOrder: true, cancellationToken: cancellationToken);
        return Current();
    }

    /// <inheritdoc />
    public Task<Inbox> ReadAsync(ReadRequest request, CancellationToken cancellationToken)
    {
        var inbox = new Inbox();
        inbox.Heard.AddRange(_heard);
        inbox.Left.AddRange(_left);
        inbox.Present.AddRange(Keys());
        if (PresenceFactory.LastView is { } seen)
        {
            inbox.FactorySawParticipants.AddRange(seen.Members.Where(m => m.Role == "instance").Select(m => m.Key).Order(StringComparer.Ordinal));
            inbox.FactorySawManagers.AddRange(seen.Members.Where(m => m.Role == "factory").Select(m => m.Key).Order(StringComparer.Ordinal));
        }

        return Task.FromResult(inbox);
    }

    /// <inheritdoc />
    protected override Task OnGroupMessageAsync(GroupMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(message);
        _heard.Add($"{message.Sender.Key}: {Encoding.UTF8.GetString(message.Payload.Span)}");
        return Task.CompletedTask;
    }

    /// <inheritdoc />
    protected override Task OnGroupViewAsync(GroupViewChange view, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(view);
        _left.AddRange(view.Left.Where(m => m.Role == "instance").Select(m => m.Key));
        return Task.CompletedTask;
    }

    private Participants Current()
    {
        var participants = new Participants { Manager = Context.Manager };
        participants.Keys.AddRange(Keys());
        return participants;
    }

    // The class factories are members too (role "factory"): participants are the instances.
    private IEnumerable<string> Keys() => _group is null ? [] : _group.Members.Where(m => m.Role == "instance").Select(m => m.Key).Order(StringComparer.Ordinal);
}
