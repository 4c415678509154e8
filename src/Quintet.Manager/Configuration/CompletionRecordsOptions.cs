using System.Globalization;

namespace Quintet.Manager.Configuration;

/// <summary>
/// The bounds of the completion records an instance's owner keeps, so that a retried call is answered from its record
/// instead of running again; bound from the <c>Quintet:CompletionRecords</c> section.
/// </summary>
public sealed class CompletionRecordsOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:CompletionRecords";

    /// <summary>
    /// The most records one instance keeps for one client; past it the lowest-numbered is dropped, and a retry of that
    /// call is refused rather than run again. A client has a record for each call it has not acknowledged yet.
    /// <value>Default: 256.</value>
    /// </summary>
    public int MaxPerClient { get; set; } = 256;

    /// <summary>
    /// The most records this manager keeps for all its instances together; past it the oldest are dropped (their
    /// retries are refused). <value>Default: 100 000.</value>
    /// </summary>
    public int MaxRecords { get; set; } = 100_000;

    /// <summary>
    /// The most bytes (recorded replies and their overhead) this manager keeps; past it the oldest records are dropped.
    /// <value>Default: 67 108 864 (64 MiB).</value>
    /// </summary>
    public long MaxBytes { get; set; } = 64L * 1024 * 1024;

    /// <summary>
    /// A client's lease: the records of a client that has called none of this manager's instances for this long are
    /// dropped. Keep it well above the clients' failover budget (10 s by default), the longest a client retries a call.
    /// <value>Default: 5 minutes.</value>
    /// </summary>
    public TimeSpan ClientLease { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>The settings that are out of range, each with a message naming it.</summary>
    public IEnumerable<string> Validate()
    {
        if (MaxPerClient < 1)
        {
            yield return $"{SectionName}:MaxPerClient: {MaxPerClient.ToString(CultureInfo.InvariantCulture)} is not a number of records; use 1 or more (the default is 256).";
        }

        if (MaxRecords < 1)
        {
            yield return $"{SectionName}:MaxRecords: {MaxRecords.ToString(CultureInfo.InvariantCulture)} is not a number of records; use 1 or more (the default is 100000).";
        }

        if (MaxBytes < 1024)
        {
            yield return $"{SectionName}:MaxBytes: {MaxBytes.ToString(CultureInfo.InvariantCulture)} is too small; use 1024 or more (the default is 67108864, 64 MiB).";
        }

        if (ClientLease < TimeSpan.FromSeconds(1))
        {
            yield return $"{SectionName}:ClientLease: {ClientLease} is too short; use 00:00:01 or more, well above the clients' failover budget (the default is 00:05:00).";
        }
    }
}
