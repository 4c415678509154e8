using System.Globalization;
using Quintet.Runtime.Structures;

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

    /// <summary>
    /// The most entries (dictionary entries, set members, queue items) a write made on this manager may take a
    /// structure to. Every replica holds a write to the limits of the manager that made it, so managers may differ
    /// without their replicas disagreeing. <value>Default: 1 000 000.</value>
    /// </summary>
    public int MaxEntries { get; set; } = 1_000_000;

    /// <summary>
    /// The most bytes (keys, members and values together) a write made on this manager may take a structure to; held
    /// like <see cref="MaxEntries"/>. <value>Default: 268 435 456 (256 MiB).</value>
    /// </summary>
    public long MaxBytes { get; set; } = 256L * 1024 * 1024;

    /// <summary>
    /// How many changes may wait for one subscriber of a structure on this manager before it is cut off as too slow.
    /// <value>Default: 1 024.</value>
    /// </summary>
    public int WatchBuffer { get; set; } = 1024;

    /// <summary>The limits these settings give this manager's structures.</summary>
    public SharedStructureLimits ToLimits() => new() { MaxEntries = MaxEntries, MaxBytes = MaxBytes, WatchBuffer = WatchBuffer };

    /// <summary>The settings that are out of range, each with a message naming it.</summary>
    public IEnumerable<string> Validate()
    {
        if (DurableSnapshotEveryCommands < 1)
        {
            yield return $"{SectionName}:DurableSnapshotEveryCommands: {DurableSnapshotEveryCommands.ToString(CultureInfo.InvariantCulture)} is not a number of commands; use 1 or more (the default is 100000).";
        }

        if (MaxEntries < 1)
        {
            yield return $"{SectionName}:MaxEntries: {MaxEntries.ToString(CultureInfo.InvariantCulture)} is not a number of entries; use 1 or more (the default is 1000000).";
        }

        if (MaxBytes < 1)
        {
            yield return $"{SectionName}:MaxBytes: {MaxBytes.ToString(CultureInfo.InvariantCulture)} is not a number of bytes; use 1 or more (the default is 268435456, 256 MiB).";
        }

        if (WatchBuffer < 1)
        {
            yield return $"{SectionName}:WatchBuffer: {WatchBuffer.ToString(CultureInfo.InvariantCulture)} is not a number of changes; use 1 or more (the default is 1024).";
        }
    }
}
