using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Runtime.States;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// An activation's groups and state registrations: each a light group member of this manager, whose deliveries and
/// views are handed to the instance in its turn. They belong to the activation: retiring, migrating or deactivating it
/// leaves them.
/// </summary>
internal sealed class InstanceGroups(GroupService groups, Shadow shadow, Component instance) : IComponentGroups, IComponentStates, IAsyncDisposable
{
    // Most activations never join a group: the tables are made on first join.
    private readonly Lock _gate = new();
    private Dictionary<string, InstanceGroup>? _joined;
    private Dictionary<string, MaintainedStateMember>? _states;

    /// <summary>The light group of a class's ClassGroup.</summary>
    public static string ClassGroupName(string className) => "quintet.class/" + className;

    public Task<IComponentGroup> ClassGroupAsync(CancellationToken cancellationToken = default) =>
        JoinLightAsync(ClassGroupName(shadow.Class.Name), "instance", cancellationToken);

    public Task<IComponentGroup> JoinAsync(string name, string role = "member", CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentException.ThrowIfNullOrWhiteSpace(role);
        return JoinLightAsync("app/" + name, role, cancellationToken);
    }

    public async Task<IMaintainedState> RegisterAsync(string name, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        if (instance is not IMigrateState migrating)
        {
            throw new InvalidOperationException($"{shadow.Class.Name} cannot register for state '{name}': it must implement IMigrateState (or derive from Component<TState>) so that its state can be taken and installed.");
        }

        lock (_gate)
        {
            if (_states is not null && _states.TryGetValue(name, out var existing))
            {
                return existing;
            }
        }

        var registration = await MaintainedStateMember.JoinAsync(groups, name, shadow.Key, migrating, InTurnAsync, null, cancellationToken);
        lock (_gate)
        {
            if ((_states ??= new Dictionary<string, MaintainedStateMember>(StringComparer.Ordinal)).TryAdd(name, registration))
            {
                return registration;
            }
        }

        await registration.DisposeAsync();
        lock (_gate)
        {
            return _states![name];
        }
    }

    /// <summary>Runs state work in the instance's turn, if this activation is still the live one.</summary>
    private async Task InTurnAsync(Func<CancellationToken, Task> work)
    {
        await shadow.Turn.WaitAsync();
        try
        {
            if (ReferenceEquals(shadow.Instance, instance))
            {
                await work(CancellationToken.None);
            }
        }
        finally
        {
            shadow.Turn.Release();
        }
    }

    private async Task<IComponentGroup> JoinLightAsync(string lightName, string role, CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            if (_joined is not null && _joined.TryGetValue(lightName, out var existing))
            {
                return existing;
            }
        }

        var member = await groups.JoinLightGroupAsync(lightName, new LightGroupJoinOptions { Role = role, Tag = shadow.Key, SubscribeToViews = true }, cancellationToken);
        var group = new InstanceGroup(lightName, member, shadow, instance);
        lock (_gate)
        {
            if ((_joined ??= new Dictionary<string, InstanceGroup>(StringComparer.Ordinal)).TryAdd(lightName, group))
            {
                group.Start();
                return group;
            }
        }

        // Joined twice at once: keep the first membership.
        await member.DisposeAsync();
        lock (_gate)
        {
            return _joined![lightName];
        }
    }

    public async ValueTask DisposeAsync()
    {
        List<InstanceGroup> joined;
        List<MaintainedStateMember> states;
        lock (_gate)
        {
            joined = _joined is null ? [] : [.. _joined.Values];
            _joined = null;
            states = _states is null ? [] : [.. _states.Values];
            _states = null;
        }

        foreach (var state in states)
        {
            await state.DisposeAsync();
        }

        foreach (var group in joined)
        {
            await group.LeaveAsync(CancellationToken.None);
        }
    }

    private sealed class InstanceGroup(string name, LightGroupMember member, Shadow shadow, Component instance) : IComponentGroup
    {
        private LightGroupView? _view;

        public string Name => name.StartsWith("app/", StringComparison.Ordinal) ? name[4..] : name["quintet.class/".Length..];

        public GroupMember Self => new(member.Self.ToString(), shadow.Key, member.Role);

        public IReadOnlyList<GroupMember> Members => [.. (_view ?? member.View)?.Members.Select(ToMember) ?? []];

        public void Start() => _ = Task.Run(PumpAsync);

        public Task MulticastAsync(ReadOnlyMemory<byte> payload, bool totalOrder = false, string? role = null, CancellationToken cancellationToken = default) =>
            member.MulticastAsync(payload, totalOrder ? MessageOrdering.Total : MessageOrdering.Atomic, role, cancellationToken);

        public Task SendAsync(GroupMember recipient, ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default)
        {
            ArgumentNullException.ThrowIfNull(recipient);
            var target = member.View?.Members.Where(m => m.Id.ToString() == recipient.Id).Select(m => (LightMemberId?)m.Id).FirstOrDefault()
                ?? throw new ArgumentException($"{recipient.Id} is not in the current view of group '{Name}'.", nameof(recipient));
            return member.SendAsync(target, payload, cancellationToken);
        }

        /// <summary>
        /// Leaves; the pump ends by itself once the member's events end (not awaited: the caller may hold the instance's
        /// turn, which the pump would need to finish a delivery it holds, and the instance it would deliver to is gone).
        /// </summary>
        public async Task LeaveAsync(CancellationToken cancellationToken = default) => await member.DisposeAsync();

        private static GroupMember ToMember(LightGroupMemberInfo info) => new(info.Id.ToString(), info.Tag, info.Role);

        private async Task PumpAsync()
        {
            await foreach (var groupEvent in member.Events.ReadAllAsync())
            {
                switch (groupEvent)
                {
                    case LightViewInstalled { View: var view }:
                        var previous = _view;
                        _view = view;
                        var members = view.Members.Select(ToMember).ToList();
                        var before = previous?.Members.Select(ToMember).ToList() ?? [];
                        var change = new GroupViewChange(Name, view.Id, members, [.. members.Where(m => !before.Contains(m))], [.. before.Where(m => !members.Contains(m))]);
                        await InTurnAsync(lifecycle => lifecycle.GroupViewAsync(change, CancellationToken.None));
                        break;
                    case LightMessageDelivered { Delivery: var delivery }:
                        var senderId = delivery.Sender.ToString();
                        var sender = _view?.Members.Where(m => m.Id == delivery.Sender).Select(ToMember).FirstOrDefault() ?? new GroupMember(senderId, string.Empty, string.Empty);
                        var message = new GroupMessage(Name, sender, delivery.Payload, delivery.Direct);
                        await InTurnAsync(lifecycle => lifecycle.GroupMessageAsync(message, CancellationToken.None));
                        break;
                }
            }
        }

        /// <summary>Runs a group hook in the instance's turn, if this activation is still the live one.</summary>
        private async Task InTurnAsync(Func<IComponentLifecycle, Task> hook)
        {
            await shadow.Turn.WaitAsync();
            try
            {
                if (ReferenceEquals(shadow.Instance, instance))
                {
                    await hook(instance);
                }
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                // A failing hook must not stop the group's deliveries to the instance; the next message comes anyway.
                shadow.Record("group", e.GetType().Name, null, $"{e.GetType().Name}: {e.Message}", TimeSpan.Zero, debug: false);
            }
            finally
            {
                shadow.Turn.Release();
            }
        }
    }
}
