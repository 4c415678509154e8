namespace Quintet.TestingHost.Workloads;

/// <summary>How <see cref="WorkloadRunner"/> runs a workload. Every bound holds whatever the system under test does.</summary>
public sealed class WorkloadOptions
{
    /// <summary>How many clients run at once, each with at most one operation outstanding (Jepsen's processes).</summary>
    /// <value>Default 5.</value>
    public int Clients { get; set; } = 5;

    /// <summary>How long the clients keep issuing operations.</summary>
    /// <value>Default 30 s.</value>
    public TimeSpan Duration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How many operations the clients issue at most, all together.</summary>
    /// <value>Default 10,000.</value>
    public int MaxOperations { get; set; } = 10_000;

    /// <summary>How long an operation may take before the client records it as <c>info</c> (unknown) and moves on.</summary>
    /// <value>Default 5 s.</value>
    public TimeSpan OperationTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>The longest pause a client takes between two operations (each pause is random, up to this), which keeps
    /// the load on a small machine moderate and the concurrency per key low enough to check.</summary>
    /// <value>Default 20 ms.</value>
    public TimeSpan MaxPause { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>Seeds each client's generator (client <c>i</c> uses <c>Seed + i</c>), so that the operations each client
    /// chooses are the same from run to run.</summary>
    /// <value>Default 1.</value>
    public int Seed { get; set; } = 1;

    /// <summary>How long <see cref="WorkloadRunner.RunFinalAsync"/> keeps retrying the final operations.</summary>
    /// <value>Default 60 s.</value>
    public TimeSpan FinalTimeout { get; set; } = TimeSpan.FromSeconds(60);

    internal void Validate()
    {
        static void Positive(TimeSpan value, string name)
        {
            if (value <= TimeSpan.Zero)
            {
                throw new ArgumentOutOfRangeException(name, value, $"{nameof(WorkloadOptions)}.{name} must be positive.");
            }
        }

        if (Clients < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(Clients), Clients, $"{nameof(WorkloadOptions)}.{nameof(Clients)} must be at least 1.");
        }

        if (MaxOperations < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxOperations), MaxOperations, $"{nameof(WorkloadOptions)}.{nameof(MaxOperations)} must not be negative.");
        }

        if (MaxPause < TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxPause), MaxPause, $"{nameof(WorkloadOptions)}.{nameof(MaxPause)} must not be negative.");
        }

        Positive(Duration, nameof(Duration));
        Positive(OperationTimeout, nameof(OperationTimeout));
        Positive(FinalTimeout, nameof(FinalTimeout));
    }
}
