namespace Quintet.Components;

/// <summary>
/// Marks a component contract (an interface that is also <see cref="ComponentContractAttribute"/>) as the class's
/// <b>management module</b>: a panel of views and actions that administrators run on one instance from the console or
/// <c>quintet component manage</c>, and no client calls. Its operations run inside the instance like any other call
/// (after the running call, on its owner, with its state and checkpoints), and the cluster's administrative roles open
/// them, not the package's: a view (an operation marked <see cref="ReadOnlyOperationAttribute"/>) to <c>reader</c>, an
/// action to <see cref="ActionsRole"/>. Every action is written to the audit log, with its caller and arguments.
/// </summary>
/// <remarks>
/// The console runs no package code: it renders a view's response as a list of its fields and asks for an action's
/// request fields in a form, so a request holds only strings, numbers, booleans and enums (checked at deploy). A client
/// that calls a management contract on the component route is refused with <c>PERMISSION_DENIED</c>: management runs
/// through the admin API (<c>GetManagementView</c>, <c>RunManagementAction</c>), where it is checked and audited.
/// </remarks>
[AttributeUsage(AttributeTargets.Interface, Inherited = false)]
public sealed class ManagementContractAttribute : Attribute
{
    /// <summary>Marks the contract as a management module with the title the console gives its panel.</summary>
    /// <param name="title">The panel's title, for example <c>Account administration</c>.</param>
    public ManagementContractAttribute(string title)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(title);
        Title = title;
    }

    /// <summary>The panel's title.</summary>
    public string Title { get; }

    /// <summary>
    /// The least administrative role that runs the contract's actions: <c>operator</c> or <c>admin</c> (the default).
    /// An operation may name its own with <see cref="ManagementOperationAttribute.Role"/>.
    /// </summary>
    public string ActionsRole { get; init; } = "admin";
}

/// <summary>How the console presents one operation of a <see cref="ManagementContractAttribute">management contract</see>.</summary>
[AttributeUsage(AttributeTargets.Method, Inherited = false)]
public sealed class ManagementOperationAttribute : Attribute
{
    /// <summary>The button's or the view's label; the operation's name when empty.</summary>
    public string Label { get; init; } = "";

    /// <summary>One sentence on what the operation shows or does.</summary>
    public string Description { get; init; } = "";

    /// <summary>
    /// A question the console asks before running an action (for example <c>Freeze this account?</c>); none when empty.
    /// </summary>
    public string Confirmation { get; init; } = "";

    /// <summary>
    /// The least administrative role that runs this operation, instead of its contract's (<c>reader</c> for a view,
    /// <see cref="ManagementContractAttribute.ActionsRole"/> for an action): <c>reader</c>, <c>operator</c> or
    /// <c>admin</c>; an action needs at least <c>operator</c>. Empty: the contract's.
    /// </summary>
    public string Role { get; init; } = "";
}
