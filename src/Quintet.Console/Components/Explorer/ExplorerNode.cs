namespace Quintet.Console.Components.Explorer;

/// <summary>What a node of the explorer's tree stands for.</summary>
public enum ExplorerNodeKind
{
    /// <summary>The cluster as a whole.</summary>
    Cluster,

    /// <summary>A manager (by node name).</summary>
    Manager,

    /// <summary>A deployed package (by name).</summary>
    Package,

    /// <summary>A component class (by class name).</summary>
    Class,

    /// <summary>The groups a manager knows.</summary>
    Groups,

    /// <summary>The shared data structures.</summary>
    SharedStructures,

    /// <summary>The coordination tools.</summary>
    Coordination,

    /// <summary>Each manager's checkpoint store.</summary>
    CheckpointStores,
}

/// <summary>The node selected in the tree, whose details the right-hand side shows.</summary>
/// <param name="Kind">What it is.</param>
/// <param name="Name">The manager's node name, the package's or the class's name; empty for the others.</param>
public sealed record ExplorerNode(ExplorerNodeKind Kind, string Name = "")
{
    /// <summary>The cluster node, selected first.</summary>
    public static ExplorerNode Cluster { get; } = new(ExplorerNodeKind.Cluster);
}
