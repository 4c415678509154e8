namespace Quintet.Console.Admin;

/// <summary>
/// The roles that open each kind of action, as the managers' access table has them (reader, operator, admin): the
/// console shows an action only to a user whose credential carries one of them. The managers decide all the same.
/// </summary>
public static class ConsoleRoles
{
    /// <summary>Running the cluster: migrating and retiring instances, draining managers (<c>AuthorizeView Roles</c> form).</summary>
    public const string Operate = "admin,operator";

    /// <summary>Deploying, undeploying, QoS, role members, the audit log, restarting managers.</summary>
    public const string Administer = "admin";
}
