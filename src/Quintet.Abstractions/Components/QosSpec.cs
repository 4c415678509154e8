using System.Globalization;

namespace Quintet.Components;

/// <summary>How a component class's instances are replicated.</summary>
public enum ReplicationStyle
{
    /// <summary>One instance per key, no replicas.</summary>
    None = 0,

    /// <summary>A primary handles calls; backups take over when it fails.</summary>
    PrimaryBackup = 1,

    /// <summary>Every replica handles every call, in the same order.</summary>
    Active = 2,
}

/// <summary>Where the managers place a class's instances and replicas.</summary>
public enum PlacementPolicy
{
    /// <summary>Any manager will do.</summary>
    DontCare = 0,

    /// <summary>Instances and replicas on as many different managers as possible.</summary>
    Spread = 1,

    /// <summary>Instances on as few managers as possible.</summary>
    Pack = 2,

    /// <summary>On the manager named by <see cref="QosSpec.AffinityTo"/>, or beside the instances of the class it names.</summary>
    Affinity = 3,
}

/// <summary>Where a class's instances run.</summary>
public enum IsolationMode
{
    /// <summary>In the manager's process, beside other packages.</summary>
    Shared = 0,

    /// <summary>In a process of their own.</summary>
    Process = 1,
}

/// <summary>Which replicas of an instance serve calls.</summary>
public enum LoadBalancingPolicy
{
    /// <summary>The primary serves every call.</summary>
    PrimaryOnly = 0,

    /// <summary>Calls go to the replicas in turn; for active replication only.</summary>
    RoundRobin = 1,

    /// <summary>Calls go to the least loaded replica; for active replication only.</summary>
    LeastLoaded = 2,
}

/// <summary>When a class's instances are created.</summary>
public enum InstancingStyle
{
    /// <summary>One long-running instance per key, created on first use.</summary>
    Keyed = 0,

    /// <summary>A new instance for each CreateInstance call.</summary>
    Fresh = 1,
}

/// <summary>
/// A component class's reliability QoS: replication, placement, failover, retirement, isolation, load balancing,
/// debugging and instancing. Immutable; change one with a <c>with</c> expression and check it with
/// <see cref="Validate"/>, since nothing is checked on construction.
/// </summary>
public sealed record QosSpec
{
    private const int MaxReplicas = 16;
    private static readonly TimeSpan MinFailoverBudget = TimeSpan.FromMilliseconds(100);
    private static readonly TimeSpan MaxFailoverBudget = TimeSpan.FromMinutes(10);
    private static readonly TimeSpan MinRetireAfterIdle = TimeSpan.FromSeconds(1);
    private static readonly (string Unit, long Ticks)[] DurationUnits =
        [("h", TimeSpan.TicksPerHour), ("m", TimeSpan.TicksPerMinute), ("s", TimeSpan.TicksPerSecond), ("ms", TimeSpan.TicksPerMillisecond)];

    /// <summary>The spec of a class that its package does not mention: every property at its default.</summary>
    public static QosSpec Default { get; } = new();

    /// <summary>How instances are replicated.</summary>
    /// <value>Default <see cref="ReplicationStyle.None"/>.</value>
    public ReplicationStyle Replication { get; init; } = ReplicationStyle.None;

    /// <summary>Copies of each instance, the primary included: 1 for <see cref="ReplicationStyle.None"/>, otherwise 2 to 16.</summary>
    /// <value>Default 1.</value>
    public int Replicas { get; init; } = 1;

    /// <summary>Where instances and replicas are placed.</summary>
    /// <value>Default <see cref="PlacementPolicy.Spread"/>.</value>
    public PlacementPolicy Placement { get; init; } = PlacementPolicy.Spread;

    /// <summary>
    /// A manager node name, or a component class name to co-locate with; required with
    /// <see cref="PlacementPolicy.Affinity"/> and only allowed with it.
    /// </summary>
    /// <value>Default <see langword="null"/>.</value>
    public string? AffinityTo { get; init; }

    /// <summary>How long a failover may take before calls fail; 100 ms to 10 minutes.</summary>
    /// <value>Default 5 seconds.</value>
    public TimeSpan FailoverBudget { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// How long an instance may stay idle before it is checkpointed and retired, at least 1 second;
    /// <see langword="null"/> never retires it. Not allowed with <see cref="ReplicationStyle.Active"/>.
    /// </summary>
    /// <value>Default <see langword="null"/> (never).</value>
    public TimeSpan? RetireAfterIdle { get; init; }

    /// <summary>Whether instances share the manager's process or have one of their own.</summary>
    /// <value>Default <see cref="IsolationMode.Shared"/>.</value>
    public IsolationMode Isolation { get; init; } = IsolationMode.Shared;

    /// <summary>
    /// Which replicas serve calls; <see cref="LoadBalancingPolicy.RoundRobin"/> and
    /// <see cref="LoadBalancingPolicy.LeastLoaded"/> only with <see cref="ReplicationStyle.Active"/>.
    /// </summary>
    /// <value>Default <see cref="LoadBalancingPolicy.PrimaryOnly"/>.</value>
    public LoadBalancingPolicy LoadBalancing { get; init; } = LoadBalancingPolicy.PrimaryOnly;

    /// <summary>Whether the shadow records recent invocations with their arguments and results.</summary>
    /// <value>Default <see langword="false"/>.</value>
    public bool Debug { get; init; }

    /// <summary>Whether instances are long-running per key or fresh for each CreateInstance call.</summary>
    /// <value>Default <see cref="InstancingStyle.Keyed"/>.</value>
    public InstancingStyle Instancing { get; init; } = InstancingStyle.Keyed;

    /// <summary>
    /// Checks the spec. Each error starts with the field's name as spec files write it and a colon, for example
    /// <c>replicas: must be 2 to 16 for primaryBackup, was 1</c>.
    /// </summary>
    /// <returns>Every error found; empty when the spec is valid.</returns>
    public IReadOnlyList<string> Validate()
    {
        var errors = new List<string>();
        CheckDefined(Replication, "replication", errors);
        CheckDefined(Placement, "placement", errors);
        CheckDefined(Isolation, "isolation", errors);
        CheckDefined(LoadBalancing, "loadBalancing", errors);
        CheckDefined(Instancing, "instancing", errors);

        if (Replication == ReplicationStyle.None && Replicas != 1)
        {
            errors.Add($"replicas: must be 1 when replication is none, was {Replicas}");
        }
        else if (Replication != ReplicationStyle.None && Enum.IsDefined(Replication) && Replicas is < 2 or > MaxReplicas)
        {
            errors.Add($"replicas: must be 2 to {MaxReplicas} for {Name(Replication)}, was {Replicas}");
        }

        if (Placement == PlacementPolicy.Affinity && string.IsNullOrWhiteSpace(AffinityTo))
        {
            errors.Add("affinityTo: required for affinity placement; name the manager node or the component class to co-locate with");
        }
        else if (Placement != PlacementPolicy.Affinity && AffinityTo is not null)
        {
            errors.Add($"affinityTo: only allowed with affinity placement, placement is {Name(Placement)}");
        }

        if (FailoverBudget < MinFailoverBudget || FailoverBudget > MaxFailoverBudget)
        {
            errors.Add($"failoverBudget: must be 100ms to 10m, was {Duration(FailoverBudget)}");
        }

        if (RetireAfterIdle is { } idle)
        {
            // An actively replicated instance is its replicas' state: retiring one would drop a member of that group.
            if (Replication == ReplicationStyle.Active)
            {
                errors.Add("retireAfterIdle: not allowed for active replication");
            }
            else if (idle < MinRetireAfterIdle)
            {
                errors.Add($"retireAfterIdle: must be at least 1s, was {Duration(idle)}");
            }
        }

        if ((LoadBalancing is LoadBalancingPolicy.RoundRobin or LoadBalancingPolicy.LeastLoaded) && Replication != ReplicationStyle.Active)
        {
            errors.Add($"loadBalancing: {Name(LoadBalancing)} needs active replication (only active replicas can all serve calls), replication is {Name(Replication)}; use primaryOnly");
        }

        return errors;
    }

    private static void CheckDefined<T>(T value, string field, List<string> errors)
        where T : struct, Enum
    {
        if (!Enum.IsDefined(value))
        {
            errors.Add($"{field}: {value} is not one of {string.Join(", ", Enum.GetNames<T>().Select(CamelCase))}");
        }
    }

    private static string Name<T>(T value)
        where T : struct, Enum => CamelCase(value.ToString());

    /// <summary>A duration as spec files write it (<c>500ms</c>, <c>5s</c>), so that an error quotes it the way it was given.</summary>
    private static string Duration(TimeSpan value)
    {
        if (value == TimeSpan.Zero)
        {
            return "0s";
        }

        if (value > TimeSpan.Zero)
        {
            foreach (var (unit, ticks) in DurationUnits)
            {
                if (value.Ticks % ticks == 0)
                {
                    return $"{value.Ticks / ticks}{unit}";
                }
            }
        }

        return value.ToString("c", CultureInfo.InvariantCulture);
    }

    private static string CamelCase(string name) => char.ToLowerInvariant(name[0]) + name[1..];
}
