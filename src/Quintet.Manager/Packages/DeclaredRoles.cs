using System.Reflection;
using System.Text.RegularExpressions;
using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>
/// The roles a package declares with <see cref="ComponentRolesAttribute"/>, read when it is loaded: each class's,
/// contract's and operation's own, and what each operation inherits (its own, else its contract's, else its class's).
/// </summary>
internal static partial class DeclaredRoles
{
    /// <summary>The longest role name accepted.</summary>
    public const int MaxRoleLength = 64;

    /// <summary>The roles <paramref name="member"/> declares itself, each once, in declaration order; empty when none.</summary>
    /// <exception cref="PackageException">A role name is not one (empty, too long, or with other characters).</exception>
    public static IReadOnlyList<string> Own(MemberInfo member, string field)
    {
        List<string> roles = [];
        foreach (var attribute in member.GetCustomAttributes<ComponentRolesAttribute>(inherit: false))
        {
            foreach (var role in attribute.Roles)
            {
                if (Problem(role) is { } problem)
                {
                    throw new PackageException($"{field}: [ComponentRoles] on {Describe(member)}: {problem}");
                }

                if (!roles.Contains(role, StringComparer.Ordinal))
                {
                    roles.Add(role);
                }
            }
        }

        return roles;
    }

    /// <summary>
    /// An operation's own roles: those on the contract's method and those on the method of <paramref name="componentType"/>
    /// that implements it, together.
    /// </summary>
    public static IReadOnlyList<string> OwnOfOperation(Type componentType, MethodInfo contractMethod, string field)
    {
        var own = Own(contractMethod, field);
        var map = componentType.GetInterfaceMap(contractMethod.DeclaringType!);
        var index = Array.IndexOf(map.InterfaceMethods, contractMethod);
        if (index < 0)
        {
            return own;
        }

        var implementation = Own(map.TargetMethods[index], field);
        return implementation.Count == 0 ? own : [.. own.Concat(implementation).Distinct(StringComparer.Ordinal)];
    }

    /// <summary>What a member with <paramref name="own"/> roles answers to: its own, or if none its parent's.</summary>
    public static IReadOnlyList<string> Inherit(IReadOnlyList<string> own, IReadOnlyList<string> parent) => own.Count > 0 ? own : parent;

    /// <summary>Why <paramref name="role"/> is not a role name, or null when it is one.</summary>
    public static string? Problem(string? role) =>
        string.IsNullOrEmpty(role) ? "a role name is empty"
        : role.Length > MaxRoleLength ? $"the role name '{role[..16]}...' is {role.Length} characters long; at most {MaxRoleLength} are accepted"
        : !RoleName().IsMatch(role) ? $"'{role}' is not a role name: use letters, digits, '.', '_' and '-', starting with a letter or digit"
        : null;

    private static string Describe(MemberInfo member) => member switch
    {
        Type type => type.FullName ?? type.Name,
        _ => $"{member.DeclaringType?.FullName}.{member.Name}",
    };

    [GeneratedRegex("^[A-Za-z0-9][A-Za-z0-9._-]*$", RegexOptions.CultureInvariant)]
    private static partial Regex RoleName();
}
