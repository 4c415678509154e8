using System.Globalization;

namespace Quintet.Manager.Configuration;

/// <summary>The shared data structures this manager holds replicas of, bound from the <c>Quintet:SharedStructures</c> section.</summary>
public sealed class SharedStructuresOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:SharedStructures";

    /// <summary>
    /// How many commands a durable structure's log on this manager holds before the replica writes a snapshot and
    /// truncates its log. Fewer: a faster replay after a restart and a smaller log; more: fewer snapshots written. Each
    /// replica decides alone, so managers may differ.
    /// <value>Default: 100 000.</value>
    /// </summary>
    public int DurableSnapshotEveryCommands { get; set; } = 100_000;

    /// <summary>The settings that are out of range, each with a message naming it.</summary>
    public IEnumerable<string> Validate()
    {
        if (DurableSnapshotEveryCommands < 1)
        {
            yield return $"{SectionName}:DurableSnapshotEveryCommands: {DurableSnapshotEveryCommands.ToString(CultureInfo.InvariantCulture)} is not a number of commands; use 1 or more (the default is 100000).";
        }
    }
}
