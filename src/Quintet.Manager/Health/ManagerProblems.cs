using System.Collections.Concurrent;

namespace Quintet.Manager.Health;

/// <summary>
/// What this manager finds wrong with itself: each problem is a sentence an operator can act on, kept until the manager
/// mends it or restarts, and shown in its report (<c>quintet cluster</c>, the console).
/// </summary>
internal sealed class ManagerProblems
{
    private readonly ConcurrentDictionary<string, string> _problems = new(StringComparer.Ordinal);

    /// <summary>The problems, sorted by what they concern.</summary>
    public IReadOnlyList<string> Current => [.. _problems.OrderBy(p => p.Key, StringComparer.Ordinal).Select(p => p.Value)];

    /// <summary>Records a problem about <paramref name="subject"/>; the first report of a subject stands (it says when trouble began).</summary>
    public void Report(string subject, string problem)
    {
        ArgumentException.ThrowIfNullOrEmpty(subject);
        ArgumentException.ThrowIfNullOrEmpty(problem);
        _problems.TryAdd(subject, problem);
    }

    /// <summary>Records a problem about <paramref name="subject"/>, or replaces the one recorded: for a problem whose sentence says how things stand now (an extension's count of slow calls).</summary>
    public void Set(string subject, string problem)
    {
        ArgumentException.ThrowIfNullOrEmpty(subject);
        ArgumentException.ThrowIfNullOrEmpty(problem);
        _problems[subject] = problem;
    }

    /// <summary>Takes back the problem about <paramref name="subject"/>: the manager mended it.</summary>
    public void Clear(string subject) => _problems.TryRemove(subject, out _);

    /// <summary>The durable log of a shared structure could not be written (<see cref="Quintet.Runtime.Replication.DurabilityOptions.WriteFailed"/>).</summary>
    public void DurableLogFailed(string machine, Exception failure) =>
        Report(
            DurableLogSubject(machine),
            $"The durable log of '{machine}' could not be written ({failure.Message}): this manager's replica reports no write durable until "
            + "it repairs the log, while the other managers acknowledge writes as long as they are a majority. Free or repair the disk "
            + "of the data directory: at a write, at most a minute later, the replica writes a snapshot of its state, which repairs the "
            + "log, and this problem goes away. A restart also recovers the log's good prefix and catches up from the others.");

    /// <summary>A broken durable log was repaired by a snapshot (<see cref="Quintet.Runtime.Replication.DurabilityOptions.WriteRepaired"/>).</summary>
    public void DurableLogRepaired(string machine) => Clear(DurableLogSubject(machine));

    /// <summary>A checkpoint store's file (the local store or this manager's replica) could not be written.</summary>
    public void StoreWriteFailed(string path, Exception failure) =>
        Report(
            StoreSubject(path),
            $"The checkpoint store {path} could not be written ({failure.Message}): it refuses writes until it repairs the file. Free or "
            + "repair the disk of the data directory: at a write, at most a minute later, the file is cut back to its last synced commit "
            + "and takes writes again, and this problem goes away.");

    /// <summary>A checkpoint store's file broken by a failed write takes writes again.</summary>
    public void StoreRepaired(string path) => Clear(StoreSubject(path));

    private static string DurableLogSubject(string machine) => "durable-log/" + machine;

    private static string StoreSubject(string path) => "checkpoint-store/" + path;
}
