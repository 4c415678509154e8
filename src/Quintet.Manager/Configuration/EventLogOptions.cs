using System.Globalization;

namespace Quintet.Manager.Configuration;

/// <summary>
/// How many of an instance's published events its log retains for subscribers that resume; bound from the
/// <c>Quintet:Events</c> section. The oldest go first past either bound; a subscriber resuming before the oldest retained
/// event is refused with <c>OUT_OF_RANGE</c>, the missing positions named.
/// </summary>
public sealed class EventLogOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Events";

    /// <summary>The most events one instance's log retains. <value>Default: 1000.</value></summary>
    public int MaxEventsPerInstance { get; set; } = 1000;

    /// <summary>The most bytes of events one instance's log retains. <value>Default: 1 048 576 (1 MiB).</value></summary>
    public long MaxBytesPerInstance { get; set; } = 1024 * 1024;

    /// <summary>
    /// The most events a checkpoint of the instance's stream carries (its newest); the log's id and last position always
    /// go. An instance started again from its stream alone (its manager failed, no backup) resumes its subscribers that
    /// had seen at least the event before these; one further behind gets <c>OUT_OF_RANGE</c>. 0 writes no events.
    /// <value>Default: 32.</value>
    /// </summary>
    public int MaxEventsPerCheckpoint { get; set; } = 32;

    /// <summary>The settings that are out of range, each with a message naming it.</summary>
    public IEnumerable<string> Validate()
    {
        if (MaxEventsPerInstance < 1)
        {
            yield return $"{SectionName}:MaxEventsPerInstance: {MaxEventsPerInstance.ToString(CultureInfo.InvariantCulture)} is not a number of events; use 1 or more (the default is 1000).";
        }

        if (MaxBytesPerInstance < 1024)
        {
            yield return $"{SectionName}:MaxBytesPerInstance: {MaxBytesPerInstance.ToString(CultureInfo.InvariantCulture)} is too small; use 1024 or more (the default is 1048576, 1 MiB).";
        }

        if (MaxEventsPerCheckpoint < 0)
        {
            yield return $"{SectionName}:MaxEventsPerCheckpoint: {MaxEventsPerCheckpoint.ToString(CultureInfo.InvariantCulture)} is not a number of events; use 0 or more (the default is 32).";
        }
    }
}
