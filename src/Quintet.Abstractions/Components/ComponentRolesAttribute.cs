namespace Quintet.Components;

/// <summary>
/// Declares the roles that may call a component class, a contract or one operation, the way COM+ declares roles of an
/// application: the package names its roles, and an administrator decides at run time who is in each
/// (<c>quintet roles add &lt;package&gt; &lt;role&gt; user:alice</c>). With security on, a call is admitted when the
/// caller is a member of one of the roles that open its operation.
/// </summary>
/// <remarks>
/// Declarations inherit downward: an operation with no declaration of its own takes its contract's, and a contract with
/// none takes its component class's. An operation's own declaration is the attribute on the contract's method or on the
/// class's method that implements it (both count). A package that declares roles anywhere has its calls checked
/// everywhere: an operation that ends up with no role at all admits no client (fail closed). A package that declares no
/// role stays open to any authenticated caller. Role names are letters, digits, <c>.</c>, <c>_</c> and <c>-</c>,
/// starting with a letter or digit, at most 64 characters, compared exactly; a name outside that is refused at deploy.
/// </remarks>
[AttributeUsage(AttributeTargets.Class | AttributeTargets.Interface | AttributeTargets.Method, AllowMultiple = true, Inherited = false)]
public sealed class ComponentRolesAttribute : Attribute
{
    /// <summary>Declares <paramref name="roles"/> on the class, contract or operation it marks.</summary>
    /// <param name="roles">The roles that open it, for example <c>"teller", "auditor"</c>: a member of any one may call.</param>
    public ComponentRolesAttribute(params string[] roles)
    {
        ArgumentNullException.ThrowIfNull(roles);
        Roles = roles;
    }

    /// <summary>The roles declared, as written (checked when the package is deployed).</summary>
    public IReadOnlyList<string> Roles { get; }
}
