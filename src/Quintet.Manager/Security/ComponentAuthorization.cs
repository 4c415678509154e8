namespace Quintet.Manager.Security;

/// <summary>The answer to whether a caller may call an operation, and the package roles it holds for <c>CurrentCall</c>.</summary>
/// <param name="Allowed">Whether the call may go on.</param>
/// <param name="HeldRoles">The package's roles the caller is a member of, sorted.</param>
internal readonly record struct RoleDecision(bool Allowed, IReadOnlyList<string> HeldRoles);

/// <summary>
/// The authorization of component calls by the roles a package declares (COM+ roles): a package that declares no role
/// is open to any authenticated caller; in one that declares roles, an operation admits the members of the roles that
/// open it, and nobody when none does (fail closed). A caller is a member of a role when the role's members, as an
/// administrator assigned them, name it (<c>user:&lt;name&gt;</c>) or one of its credential's roles
/// (<c>role:&lt;name&gt;</c>). Pure: the step that enforces it and the tests share it.
/// </summary>
internal static class ComponentAuthorization
{
    /// <summary>The prefix of a member naming a caller by its authenticated name.</summary>
    public const string UserPrefix = "user:";

    /// <summary>The prefix of a member naming every caller whose credential carries a role.</summary>
    public const string RolePrefix = "role:";

    /// <summary>The longest member accepted, prefix included.</summary>
    public const int MaxMemberLength = 256;

    /// <summary>Decides one call.</summary>
    /// <param name="packageDeclaresRoles">Whether the operation's package declares any role.</param>
    /// <param name="operationRoles">The roles that open the operation (its own, else its contract's, else its class's).</param>
    /// <param name="caller">The authenticated caller's name.</param>
    /// <param name="callerRoles">The roles of the caller's credential.</param>
    /// <param name="assigned">The package's roles that have members, with them.</param>
    public static RoleDecision Decide(bool packageDeclaresRoles, IReadOnlyList<string> operationRoles, string? caller, IReadOnlyList<string>? callerRoles, IReadOnlyDictionary<string, IReadOnlySet<string>> assigned)
    {
        var held = HeldRoles(caller, callerRoles, assigned);
        if (!packageDeclaresRoles)
        {
            return new RoleDecision(true, held);
        }

        foreach (var role in operationRoles)
        {
            if (held.Contains(role, StringComparer.Ordinal))
            {
                return new RoleDecision(true, held);
            }
        }

        return new RoleDecision(false, held);
    }

    /// <summary>The roles of <paramref name="assigned"/> whose members name the caller or one of its credential's roles, sorted.</summary>
    public static IReadOnlyList<string> HeldRoles(string? caller, IReadOnlyList<string>? callerRoles, IReadOnlyDictionary<string, IReadOnlySet<string>> assigned)
    {
        if (assigned.Count == 0)
        {
            return [];
        }

        List<string>? held = null;
        foreach (var (role, members) in assigned)
        {
            if (IsMember(members, UserPrefix, caller) || HoldsAny(members, callerRoles))
            {
                (held ??= []).Add(role);
            }
        }

        if (held is null)
        {
            return [];
        }

        held.Sort(StringComparer.Ordinal);
        return held;
    }

    private static bool HoldsAny(IReadOnlySet<string> members, IReadOnlyList<string>? callerRoles)
    {
        if (callerRoles is null)
        {
            return false;
        }

        foreach (var callerRole in callerRoles)
        {
            if (IsMember(members, RolePrefix, callerRole))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Whether <paramref name="members"/> holds <paramref name="prefix"/> followed by <paramref name="name"/>. Every
    /// component call of a package with roles asks, so the member is looked up by its characters, not built as a string.
    /// </summary>
    private static bool IsMember(IReadOnlySet<string> members, string prefix, string? name)
    {
        if (string.IsNullOrEmpty(name))
        {
            return false;
        }

        var length = prefix.Length + name.Length;
        if (length <= MaxMemberLength && members is HashSet<string> set && set.TryGetAlternateLookup<ReadOnlySpan<char>>(out var lookup))
        {
            Span<char> member = stackalloc char[MaxMemberLength];
            prefix.CopyTo(member);
            name.CopyTo(member[prefix.Length..]);
            return lookup.Contains(member[..length]);
        }

        return members.Contains(prefix + name);
    }

    /// <summary>The refusal's message: who, which operation, the roles that would open it, and how an administrator assigns members.</summary>
    public static string Refusal(string package, string service, string operation, IReadOnlyList<string> operationRoles, string? caller, IReadOnlyList<string>? callerRoles)
    {
        var who = string.IsNullOrEmpty(caller) ? "The caller" : $"'{caller}'";
        var its = callerRoles is { Count: > 0 } ? $"its credential's roles: {string.Join(", ", callerRoles)}" : "its credential carries no role";
        if (operationRoles.Count == 0)
        {
            return $"{who} may not call {service}/{operation}: package {package} declares roles, and no role opens this operation (none is declared on it, its contract or its component), so it admits no client. Declare [ComponentRoles(...)] on it and deploy the package again.";
        }

        var example = $"quintet roles add {package} {operationRoles[0]} {UserPrefix}{(string.IsNullOrEmpty(caller) ? "<name>" : caller)}";
        return $"{who} may not call {service}/{operation}: it needs to be a member of one of the roles {string.Join(", ", operationRoles)} of package {package}, and is in none ({its}). An administrator adds members with '{example}' (or role:<role> for every caller whose credential carries that role).";
    }

    /// <summary>Why <paramref name="member"/> is not a member (<c>user:&lt;name&gt;</c> or <c>role:&lt;name&gt;</c>), or null when it is one.</summary>
    public static string? MemberProblem(string? member)
    {
        if (string.IsNullOrEmpty(member))
        {
            return "a member is empty; write user:<name> or role:<name>";
        }

        if (member.Length > MaxMemberLength)
        {
            return $"the member '{member[..32]}...' is {member.Length} characters long; at most {MaxMemberLength} are accepted";
        }

        var prefix = member.StartsWith(UserPrefix, StringComparison.Ordinal) ? UserPrefix : member.StartsWith(RolePrefix, StringComparison.Ordinal) ? RolePrefix : null;
        if (prefix is null)
        {
            return $"'{member}' is not a member: write user:<name> (an authenticated caller's name: a certificate's common name, a token's name claim) or role:<name> (a role of the caller's credential: a certificate's OU, a token's roles claim)";
        }

        var name = member[prefix.Length..];
        return name.Length == 0 ? $"'{member}' names nobody: write a name after '{prefix}'"
            : name.Any(char.IsControl) ? $"'{member.Replace("\n", "\\n", StringComparison.Ordinal)}' holds a control character"
            : name.Trim().Length != name.Length ? $"'{member}' begins or ends with white space"
            : null;
    }
}
