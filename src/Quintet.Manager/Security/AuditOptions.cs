namespace Quintet.Manager.Security;

/// <summary>The audit log's settings, bound from the <c>Quintet:Audit</c> section.</summary>
public sealed class AuditOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Audit";

    /// <summary>
    /// How many entries each manager's audit log keeps. Beyond it the oldest half is removed in one step, and a marker
    /// entry says how many were removed and up to when (never silently): export the log (<c>quintet audit --output
    /// json</c>) more often than it fills if every entry must be kept.
    /// <value>Default: 100000.</value>
    /// </summary>
    public int MaxEntries { get; set; } = 100_000;
}
