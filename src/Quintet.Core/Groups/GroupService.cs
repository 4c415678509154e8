using Akka.Actor;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Core.Groups.Tracing;

namespace Quintet.Core.Groups;

/// <summary>
/// Settings of the group communication layer, bound from <c>Quintet:Groups</c>.
/// </summary>
public sealed class GroupsOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Groups";

    /// <summary>
    /// A folder where each group member writes its trace (install, send, deliver) as JSON Lines, for the
    /// virtual-synchrony checker. Costs a write per event: for tests and diagnosis.
    /// <value>Default: none (no trace).</value>
    /// </summary>
    public string? TraceDirectory { get; set; }

    /// <summary>Timers and bounds of the protocol.</summary>
    public GroupProtocolOptions Protocol { get; set; } = new();
}

/// <summary>The groups this manager belongs to. Every manager is a member of the <see cref="ManagersGroup"/>.</summary>
public sealed class GroupService : IDisposable
{
    /// <summary>The heavyweight group of all managers, over which lightweight groups are multiplexed.</summary>
    public const string ManagersGroup = "managers";

    private readonly ClusterNode _node;
    private readonly GroupsOptions _options;
    private readonly Dictionary<string, GroupHandle> _groups = [];
    private readonly List<IDisposable> _traces = [];
    private readonly Lock _gate = new();
    private readonly HashSet<string> _leftForGood = [];

    /// <summary>Creates the service; groups start with <see cref="Join"/>.</summary>
    public GroupService(ClusterNode node, IOptions<GroupsOptions> options)
    {
        ArgumentNullException.ThrowIfNull(options);
        _node = node;
        _options = options.Value;
    }

    /// <summary>This manager's membership in <paramref name="name"/>, joining the group (or founding it) on first use.</summary>
    public GroupHandle Join(string name)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        lock (_gate)
        {
            if (_groups.TryGetValue(name, out var existing))
            {
                return existing;
            }

            var handle = new GroupHandle(name, _options.Protocol.SendQueueCapacity);
            if (_leftForGood.Contains(name))
            {
                // Left as the manager stops: a new member now would be admitted under the same incarnation while the
                // manager leaves the cluster, and count as failed at its removal.
                handle.End();
                _groups[name] = handle;
                return handle;
            }

            IGroupTraceSink? trace = null;
            if (_options.TraceDirectory is { } directory)
            {
                var address = _node.SelfAddress;
                var sink = new JsonLinesTraceSink(Path.Combine(directory, $"{name}-{address.Host}-{address.Port}-{_node.Cluster.SelfUniqueAddress.Uid}.jsonl"));
                _traces.Add(sink);
                trace = sink;
            }

            IGroupTraceSink? lightTrace = null;
            if (_options.TraceDirectory is { } lightDirectory)
            {
                var address = _node.SelfAddress;
                var sink = new JsonLinesTraceSink(Path.Combine(lightDirectory, $"light-{name}-{address.Host}-{address.Port}-{_node.Cluster.SelfUniqueAddress.Uid}.jsonl"));
                _traces.Add(sink);
                lightTrace = sink;
            }

            var actor = _node.System.ActorOf(
                Props.Create(() => new GroupActor(name, _options.Protocol, trace, lightTrace, handle, _node.GroupTransport)),
                GroupActor.ActorName(name));
            handle.Attach(actor);
            _node.GroupTransport?.Register(name, actor);
            _groups[name] = handle;
            return handle;
        }
    }

    /// <summary>
    /// This manager's membership in <paramref name="name"/> if it has joined, without joining: for readers (the admin
    /// API) that must not make a manager join a group it has not joined yet or has just left.
    /// </summary>
    public GroupHandle? Find(string name)
    {
        lock (_gate)
        {
            return _groups.GetValueOrDefault(name);
        }
    }

    /// <summary>Leaves <paramref name="name"/> (see <see cref="GroupHandle.LeaveAsync"/>); a later <see cref="Join"/> joins anew.</summary>
    public async Task LeaveAsync(string name, CancellationToken cancellationToken = default)
    {
        GroupHandle? handle;
        lock (_gate)
        {
            _groups.TryGetValue(name, out handle);
        }

        if (handle is null)
        {
            return;
        }

        await handle.LeaveAsync(cancellationToken);

        // The actor's name is the group's: it must be gone before the group can be joined again.
        await handle.Actor.GracefulStop(TimeSpan.FromSeconds(10));
        _node.GroupTransport?.Unregister(name, handle.Actor);
        lock (_gate)
        {
            _groups.Remove(name);
        }
    }

    /// <summary>
    /// Leaves <paramref name="name"/> for good, as this manager stops: unlike <see cref="LeaveAsync"/>, a later
    /// <see cref="Join"/> returns the ended membership (<see cref="GroupHandle.HasEnded"/>), which holds no lease and
    /// refuses sends and light-group joins at once, instead of starting a new member. Something that asks for the group
    /// while the manager stops must not bring it back into the view: the manager is about to leave the cluster, and its
    /// removal would then count as a failure, which can leave the last managers without a majority.
    /// </summary>
    public async Task LeaveForGoodAsync(string name, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        GroupHandle? handle;
        lock (_gate)
        {
            _leftForGood.Add(name);
            _groups.TryGetValue(name, out handle);
        }

        if (handle is null || handle.HasEnded)
        {
            return;
        }

        try
        {
            await handle.LeaveAsync(cancellationToken);
        }
        finally
        {
            // A leave cut short leaves the actor to the actor system's end: the others then see this member fail.
            handle.End();
        }

        handle.Actor.Tell(PoisonPill.Instance);
        _node.GroupTransport?.Unregister(name, handle.Actor);
    }

    /// <summary>
    /// Joins (or creates) a light group multiplexed on the <see cref="ManagersGroup"/>, as a new member hosted by this
    /// manager; completes once a view of the light group includes it. See <see cref="Light.LightGroupMember"/>.
    /// </summary>
    public Task<Light.LightGroupMember> JoinLightGroupAsync(string name, Light.LightGroupJoinOptions? options = null, CancellationToken cancellationToken = default) =>
        Join(ManagersGroup).JoinLightGroupAsync(name, options, cancellationToken);

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var trace in _traces)
        {
            trace.Dispose();
        }
    }
}
