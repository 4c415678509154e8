using Google.Protobuf;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Internal;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.Ownership;

/// <summary>
/// The instance directory as every manager keeps it: the placements, the instances each manager owns, the managers'
/// announcements and the view of the directory's group, changed only by <see cref="DirectoryEvent"/> commands and views
/// at their place in the total order, so every copy passes through the same states. Deterministic: nothing here reads
/// the clock or this manager's identity; <see cref="InstanceDirectory"/> derives this manager's effects from the
/// results (<see cref="DirectoryResult"/>).
/// </summary>
/// <param name="viewInstalled">
/// Told of each view after it is applied, under the machine's lock: it must not block (completing waiters is fine).
/// </param>
internal sealed partial class DirectoryState(Action? viewInstalled = null) : IViewAwareReplicatedState
{
    private static readonly byte[] NoResult = new DirectoryResult().ToByteArray();
    private readonly Dictionary<InstanceId, PlacedInstance> _placements = [];
    private readonly Dictionary<LightMemberId, int> _ownedCounts = [];
    private readonly Dictionary<LightMemberId, DirectoryManager> _managers = [];
    private readonly Dictionary<string, string> _classNames = new(StringComparer.Ordinal);
    private readonly Dictionary<LightMemberId, LightMemberId> _members = [];
    private HashSet<LightMemberId> _viewMembers = [];
    private long _viewId;

    /// <summary>Instances placed and not released.</summary>
    public int Count => _placements.Count;

    /// <summary>Every manager that announced itself, by its member of the directory's group (left ones too).</summary>
    public IReadOnlyDictionary<LightMemberId, DirectoryManager> Managers => _managers;

    /// <summary>The members of the directory's group in the view last applied.</summary>
    public IReadOnlySet<LightMemberId> ViewMembers => _viewMembers;

    /// <summary>The id of the view last applied (0 before the first).</summary>
    public long ViewId => _viewId;

    /// <summary>Every placement, in no order (read it under the machine's lock).</summary>
    public IEnumerable<KeyValuePair<InstanceId, PlacedInstance>> Placements => _placements;

    /// <summary>The placement of <paramref name="id"/>, whether or not its owner is still in the view.</summary>
    public PlacedInstance? PlacementOf(InstanceId id) => _placements.GetValueOrDefault(id);

    /// <summary>The instances placed on <paramref name="owner"/>.</summary>
    public int OwnedBy(LightMemberId owner) => _ownedCounts.GetValueOrDefault(owner);

    /// <summary>The instances placed on <paramref name="owner"/>, with their epochs.</summary>
    public List<(InstanceId Id, long Epoch)> PlacedOn(LightMemberId owner) =>
        [.. _placements.Where(p => p.Value.Owner == owner).Select(p => (p.Key, p.Value.Epoch))];

    /// <summary>
    /// Where calls for <paramref name="id"/> go when its owner is in the view: here if this manager (<paramref name="self"/>)
    /// owns it, else the owner's endpoint once the owner announced it; null otherwise.
    /// </summary>
    public InstanceRoute? RouteOf(InstanceId id, LightMemberId self, string selfNode)
    {
        if (!_placements.TryGetValue(id, out var placement) || !_viewMembers.Contains(placement.Owner))
        {
            return null;
        }

        if (placement.Owner == self)
        {
            return new InstanceRoute(true, placement.Epoch, null, selfNode);
        }

        return _managers.TryGetValue(placement.Owner, out var manager)
            ? new InstanceRoute(false, placement.Epoch, manager.GrpcEndpoint, manager.NodeName)
            : null;
    }

    /// <summary>The member of the view whose manager announced the node name <paramref name="node"/>, if any.</summary>
    public LightMemberId? MemberNamed(string node)
    {
        foreach (var (member, manager) in _managers)
        {
            if (manager.NodeName == node && _viewMembers.Contains(member))
            {
                return member;
            }
        }

        return null;
    }

    /// <inheritdoc />
    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        var directoryEvent = DirectoryEvent.Parser.ParseFrom(command);
        var result = directoryEvent.KindCase switch
        {
            DirectoryEvent.KindOneofCase.Manager => Announce(directoryEvent.Manager),
            DirectoryEvent.KindOneofCase.Claim => Claim(directoryEvent.Claim),
            DirectoryEvent.KindOneofCase.Moved => Move(directoryEvent.Moved),
            DirectoryEvent.KindOneofCase.Backup => Backup(directoryEvent.Backup),
            DirectoryEvent.KindOneofCase.Released => Release(directoryEvent.Released),

            // From a newer manager: every copy ignores it alike.
            _ => null,
        };
        return result?.ToByteArray() ?? NoResult;
    }

    /// <inheritdoc />
    public void ViewInstalled(LightGroupView view)
    {
        ArgumentNullException.ThrowIfNull(view);

        // Owners gone from the view lose their instances here, at the same point of every copy: the next claim places
        // them again. Their placements stay, for the epoch and the backups a successor starts from.
        _viewMembers = [.. view.Members.Select(m => m.Id)];
        _viewId = view.Id;
        viewInstalled?.Invoke();
    }

    private DirectoryResult? Announce(DirectoryManager manager)
    {
        _managers[Member(manager.Member)] = manager;
        return null;
    }

    private DirectoryResult Claim(InstanceClaim claim)
    {
        var id = FromWire(claim.Instance);
        var owner = Member(claim.Owner);
        var existing = _placements.GetValueOrDefault(id);
        if ((existing is not null && _viewMembers.Contains(existing.Owner)) || !_viewMembers.Contains(owner))
        {
            return Unchanged(claim.Instance, existing);
        }

        var epoch = (existing?.Epoch ?? 0) + 1;
        Place(id, owner, epoch, keepBackups: true);
        return new DirectoryResult { Instance = claim.Instance, Changed = true, To = claim.Owner, Epoch = epoch };
    }

    private DirectoryResult Move(InstanceMoved moved)
    {
        var id = FromWire(moved.Instance);
        var from = FromWire(moved.From);
        var to = Member(moved.To);
        var existing = _placements.GetValueOrDefault(id);
        if (existing is null || existing.Owner != from || existing.Epoch != moved.Epoch || !_viewMembers.Contains(to))
        {
            return Unchanged(moved.Instance, existing);
        }

        Place(id, to, moved.Epoch + 1);
        return new DirectoryResult { Instance = moved.Instance, Changed = true, Moved = true, From = moved.From, To = moved.To, Epoch = moved.Epoch + 1 };
    }

    private DirectoryResult Backup(InstanceBackupHeld backup)
    {
        var id = FromWire(backup.Instance);
        var holder = Member(backup.Holder);
        if (!_placements.TryGetValue(id, out var existing) || existing.Owner == holder)
        {
            return Unchanged(backup.Instance, existing);
        }

        if (backup.Dropped)
        {
            existing.Backups?.Remove(holder);
        }
        else
        {
            (existing.Backups ??= []).Add(holder);
        }

        return new DirectoryResult { Instance = backup.Instance, Changed = true, To = ToWire(existing.Owner), Epoch = existing.Epoch };
    }

    private DirectoryResult Release(InstanceReleased released)
    {
        var id = FromWire(released.Instance);
        if (!_placements.TryGetValue(id, out var existing) || existing.Owner != FromWire(released.Owner) || existing.Epoch != released.Epoch)
        {
            return Unchanged(released.Instance, existing);
        }

        _placements.Remove(id);
        _ownedCounts[existing.Owner] = _ownedCounts.GetValueOrDefault(existing.Owner) - 1;
        return new DirectoryResult { Instance = released.Instance, Changed = true, From = released.Owner, Epoch = released.Epoch };
    }

    private static DirectoryResult Unchanged(InstanceRef instance, PlacedInstance? existing) =>
        new() { Instance = instance, Epoch = existing?.Epoch ?? 0 };

    private void Place(InstanceId id, LightMemberId owner, long epoch, bool keepBackups = false)
    {
        HashSet<LightMemberId>? backups = null;
        if (_placements.TryGetValue(id, out var previous))
        {
            _ownedCounts[previous.Owner] = _ownedCounts.GetValueOrDefault(previous.Owner) - 1;
            if (keepBackups && previous.Backups is { } held)
            {
                // A promoted backup is the owner now; the other holders still have the state it started from.
                held.Remove(owner);
                backups = held.Count > 0 ? held : null;
            }
        }

        _placements[id] = new PlacedInstance(owner, epoch) { Backups = backups };
        _ownedCounts[owner] = _ownedCounts.GetValueOrDefault(owner) + 1;
    }

    /// <summary>The instance <paramref name="instance"/> names; every entry of a class shares one string for its name.</summary>
    private InstanceId FromWire(InstanceRef instance)
    {
        ArgumentNullException.ThrowIfNull(instance);
        if (!_classNames.TryGetValue(instance.ClassName, out var className))
        {
            className = instance.ClassName;
            _classNames[className] = className;
        }

        return new InstanceId(className, instance.Key);
    }

    /// <summary>The member <paramref name="wire"/> names, as one id per member (their node names are many entries' owners).</summary>
    private LightMemberId Member(DirectoryMember wire)
    {
        var id = FromWire(wire);
        if (_members.TryGetValue(id, out var known))
        {
            return known;
        }

        _members[id] = id;
        return id;
    }

    public static InstanceRef ToWire(InstanceId id) => new() { ClassName = id.ClassName, Key = id.Key };

    public static DirectoryMember ToWire(LightMemberId id) =>
        new() { Node = id.Host.Node, Uid = id.Host.Uid, Incarnation = id.Host.Incarnation, Local = id.Local };

    public static LightMemberId FromWire(DirectoryMember member)
    {
        ArgumentNullException.ThrowIfNull(member);
        return new(new Core.Groups.MemberId(member.Node, member.Uid, member.Incarnation), member.Local);
    }
}

/// <summary>Where one instance is placed: its owner, at an epoch that each change of owner increases.</summary>
internal sealed record PlacedInstance(LightMemberId Owner, long Epoch)
{
    /// <summary>Managers holding the owner's latest backup; null for instances without backups.</summary>
    public HashSet<LightMemberId>? Backups { get; set; }
}
