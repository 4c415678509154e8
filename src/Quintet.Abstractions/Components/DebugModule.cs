namespace Quintet.Components;

/// <summary>
/// Names the <b>debug module</b> of a component class: code of the package that the managers run, with debug on in
/// the class's QoS spec, to say what each recorded invocation left in the instance (<see cref="DebugModule{TComponent}"/>).
/// </summary>
[AttributeUsage(AttributeTargets.Class, Inherited = false)]
public sealed class ComponentDebugModuleAttribute : Attribute
{
    /// <summary>Names the module's type: a class derived from <see cref="DebugModule{TComponent}"/> of the marked class.</summary>
    public ComponentDebugModuleAttribute(Type moduleType)
    {
        ArgumentNullException.ThrowIfNull(moduleType);
        ModuleType = moduleType;
    }

    /// <summary>The module's type.</summary>
    public Type ModuleType { get; }
}

/// <summary>
/// The untyped face of a <see cref="DebugModule{TComponent}"/>, through which the managers call it; derive from the
/// generic class.
/// </summary>
public abstract class ComponentDebugModule
{
    private protected ComponentDebugModule()
    {
    }

    /// <summary>What <paramref name="instance"/> holds now, as named values, for an invocation's record.</summary>
    public abstract IReadOnlyList<KeyValuePair<string, string>> DescribeInstance(Component instance);

    /// <summary>
    /// How a request or response of <paramref name="operation"/> is written in an invocation's record; null for the
    /// managers' own rendering (the message as JSON). Override to hide a secret field or to say it in the domain's terms.
    /// </summary>
    public virtual string? DescribeMessage(string operation, object message) => null;
}

/// <summary>
/// Component-specific debug support in the managers: with <c>debug: true</c> in the class's QoS spec, each invocation
/// the owner records (<c>quintet component instances --debug</c>, the console's instance page) carries what
/// <see cref="DescribeState"/> says of the instance after the call, and the messages as <see cref="ComponentDebugModule.DescribeMessage"/>
/// writes them. Named on the class with <see cref="ComponentDebugModuleAttribute"/>; made once per class when the
/// package is deployed (a public constructor without parameters), and called on the owner inside the instance's turn,
/// right after the call, so it sees the state the call left and no other call runs meanwhile. It must be quick and
/// must not change the instance; a module that throws is recorded as such in the invocation and never fails the call.
/// </summary>
/// <typeparam name="TComponent">The component class it describes.</typeparam>
public abstract class DebugModule<TComponent> : ComponentDebugModule
    where TComponent : Component
{
    /// <summary>What the instance holds now, as named values in the order to show them.</summary>
    protected abstract IEnumerable<KeyValuePair<string, string>> DescribeState(TComponent instance);

    /// <inheritdoc />
    public sealed override IReadOnlyList<KeyValuePair<string, string>> DescribeInstance(Component instance) => [.. DescribeState((TComponent)instance)];
}
