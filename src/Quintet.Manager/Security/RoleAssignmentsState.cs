using Google.Protobuf;
using Quintet.Manager.Internal;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.Security;

/// <summary>
/// Who is in each role of each package, as every manager's replica of <c>quintet.rsm/security/roles</c> has it: changed
/// only by <see cref="RoleCommand"/>s applied in the managers' total order, so every replica holds the same members after
/// the same command. After each command a new <see cref="Assignments"/> is published whole, which the calls read without
/// the machine's lock.
/// </summary>
internal sealed class RoleAssignmentsState : IReplicatedState
{
    private static readonly byte[] NoResult = [];

    // package → role → members; only the machine's loop writes it.
    private readonly Dictionary<string, Dictionary<string, SortedSet<string>>> _roles = new(StringComparer.Ordinal);
    private volatile RoleAssignmentsView _view = RoleAssignmentsView.Empty;

    /// <summary>The assignments after the last command applied here.</summary>
    public RoleAssignmentsView Assignments => _view;

    /// <inheritdoc />
    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        if (command.IsEmpty)
        {
            // A sync: orders nothing.
            return NoResult;
        }

        var parsed = RoleCommand.Parser.ParseFrom(command);
        if (!_roles.TryGetValue(parsed.Package, out var roles))
        {
            roles = new Dictionary<string, SortedSet<string>>(StringComparer.Ordinal);
            _roles[parsed.Package] = roles;
        }

        if (!roles.TryGetValue(parsed.Role, out var members))
        {
            members = new SortedSet<string>(StringComparer.Ordinal);
            roles[parsed.Role] = members;
        }

        switch (parsed.Kind)
        {
            case RoleCommand.Types.Kind.Add:
                members.UnionWith(parsed.Members);
                break;
            case RoleCommand.Types.Kind.Remove:
                members.ExceptWith(parsed.Members);
                break;
            case RoleCommand.Types.Kind.Set:
                members.Clear();
                members.UnionWith(parsed.Members);
                break;
            default:
                // A kind a later version added: changes nothing here, alike on every replica of this version.
                break;
        }

        var result = new RoleCommandResult();
        result.Members.AddRange(members);
        if (members.Count == 0)
        {
            roles.Remove(parsed.Role);
            if (roles.Count == 0)
            {
                _roles.Remove(parsed.Package);
            }
        }

        Publish();
        return result.ToByteArray();
    }

    /// <inheritdoc />
    public byte[] TakeSnapshot()
    {
        var snapshot = new RoleAssignmentsSnapshot();
        foreach (var (package, roles) in _roles.OrderBy(p => p.Key, StringComparer.Ordinal))
        {
            foreach (var (role, members) in roles.OrderBy(r => r.Key, StringComparer.Ordinal))
            {
                var entry = new RoleMembersEntry { Package = package, Role = role };
                entry.Members.AddRange(members);
                snapshot.Roles.Add(entry);
            }
        }

        return snapshot.ToByteArray();
    }

    /// <inheritdoc />
    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        _roles.Clear();
        foreach (var entry in RoleAssignmentsSnapshot.Parser.ParseFrom(snapshot).Roles)
        {
            if (!_roles.TryGetValue(entry.Package, out var roles))
            {
                roles = new Dictionary<string, SortedSet<string>>(StringComparer.Ordinal);
                _roles[entry.Package] = roles;
            }

            roles[entry.Role] = new SortedSet<string>(entry.Members, StringComparer.Ordinal);
        }

        Publish();
    }

    private void Publish() => _view = new RoleAssignmentsView(_roles.ToDictionary(
        p => p.Key,
        p => (IReadOnlyDictionary<string, IReadOnlySet<string>>)p.Value.ToDictionary(r => r.Key, r => (IReadOnlySet<string>)new HashSet<string>(r.Value, StringComparer.Ordinal), StringComparer.Ordinal),
        StringComparer.Ordinal));
}

/// <summary>The role assignments at one point of the order: package → role → members (<c>user:alice</c>, <c>role:tellers</c>). Never changed.</summary>
internal sealed class RoleAssignmentsView(IReadOnlyDictionary<string, IReadOnlyDictionary<string, IReadOnlySet<string>>> packages)
{
    private static readonly IReadOnlyDictionary<string, IReadOnlySet<string>> NoRoles = new Dictionary<string, IReadOnlySet<string>>();

    /// <summary>No assignment at all.</summary>
    public static RoleAssignmentsView Empty { get; } = new(new Dictionary<string, IReadOnlyDictionary<string, IReadOnlySet<string>>>());

    /// <summary>The packages with at least one member in one role.</summary>
    public IReadOnlyDictionary<string, IReadOnlyDictionary<string, IReadOnlySet<string>>> Packages { get; } = packages;

    /// <summary>The roles of <paramref name="package"/> that have members, with them.</summary>
    public IReadOnlyDictionary<string, IReadOnlySet<string>> RolesOf(string package) => Packages.GetValueOrDefault(package) ?? NoRoles;
}
