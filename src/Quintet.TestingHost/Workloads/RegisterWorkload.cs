using System.Collections.Concurrent;
using System.Globalization;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>A client of integer registers by key, as a <see cref="RegisterWorkload"/> needs it; implement it over your component.</summary>
public interface IRegisterClient
{
    /// <summary>Reads a register (linearizably: a read must see every write completed before it began).</summary>
    /// <param name="key">The register.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>Its value, or null when never written.</returns>
    Task<long?> ReadAsync(string key, CancellationToken cancellationToken);

    /// <summary>Writes a register.</summary>
    /// <param name="key">The register.</param>
    /// <param name="value">The value.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>A task that completes once the write took effect.</returns>
    Task WriteAsync(string key, long value, CancellationToken cancellationToken);

    /// <summary>Sets a register to <paramref name="value"/> if it holds <paramref name="expected"/> (null: never written).</summary>
    /// <param name="key">The register.</param>
    /// <param name="expected">The value it must hold.</param>
    /// <param name="value">The new value.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>True when it held the expected value and now holds the new one; false when it held another and nothing changed.</returns>
    Task<bool> CompareAndSetAsync(string key, long? expected, long value, CancellationToken cancellationToken);
}

/// <summary>
/// Jepsen's cas-register workload: clients read, write and compare-and-set a few integer registers, each write and cas
/// with a value never written before, and the history of each key must be linearizable (checked by
/// <see cref="LinearizabilityChecker"/> with <see cref="RegisterModel"/>).
/// </summary>
/// <param name="clientFor">The register client of each client number (one connection each, or one shared).</param>
/// <param name="keys">How many registers are in use at once; fewer keys mean more contention per key.</param>
/// <param name="operationsPerKey">After about this many operations per key, the workload moves on to fresh keys (<c>r0</c>
/// to <c>r{keys-1}</c>, then <c>r{keys}</c> on), as Jepsen's independent keys do: operations with an unknown outcome stay
/// possible forever, and without fresh keys they pile up on a key until its check is out of reach.</param>
public sealed class RegisterWorkload(Func<int, IRegisterClient> clientFor, int keys = 5, int operationsPerKey = 300) : Workload
{
    private readonly ConcurrentDictionary<int, IRegisterClient> _clients = new();
    private readonly ConcurrentDictionary<string, long?> _lastSeen = new(StringComparer.Ordinal);
    private long _nextValue;
    private long _issued;

    /// <inheritdoc />
    public override string Name => "register";

    /// <summary>Bounds the linearizability search.</summary>
    /// <value>Default: <see cref="LinearizabilityOptions"/>'s defaults.</value>
    public LinearizabilityOptions CheckerOptions { get; init; } = new();

    /// <inheritdoc />
    public override WorkloadOperation NextOperation(int client, Random random)
    {
        ArgumentNullException.ThrowIfNull(random);
        var width = Math.Max(1, keys);
        var generation = Interlocked.Increment(ref _issued) / ((long)width * Math.Max(1, operationsPerKey));
        var key = "r" + ((generation * width) + random.Next(width)).ToString(CultureInfo.InvariantCulture);
        var roll = random.NextDouble();
        if (roll < 0.4)
        {
            return new WorkloadOperation("read", key, null);
        }

        var value = Interlocked.Increment(ref _nextValue);
        if (roll < 0.7)
        {
            return new WorkloadOperation("write", key, value);
        }

        // Expect what was last seen on the key, so that a fair share of the cas operations succeed.
        var expected = _lastSeen.TryGetValue(key, out var seen) ? seen : null;
        return new WorkloadOperation("cas", key, new JsonArray(Json(expected), value));
    }

    /// <inheritdoc />
    public override async Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken)
    {
        var registers = _clients.GetOrAdd(client, clientFor);
        var key = operation.Key!;
        switch (operation.Function)
        {
            case "read":
                var read = await registers.ReadAsync(key, cancellationToken);
                _lastSeen[key] = read;
                return OperationOutcome.Ok(Json(read));
            case "write":
                var written = operation.Value!.GetValue<long>();
                await registers.WriteAsync(key, written, cancellationToken);
                _lastSeen[key] = written;
                return OperationOutcome.Ok(written);
            default:
                var pair = operation.Value!.AsArray();
                var expected = pair[0]?.GetValue<long>();
                var replacement = pair[1]!.GetValue<long>();
                var swapped = await registers.CompareAndSetAsync(key, expected, replacement, cancellationToken);
                if (swapped)
                {
                    _lastSeen[key] = replacement;
                }

                return swapped ? OperationOutcome.Ok(pair.DeepClone()) : OperationOutcome.Fail(pair.DeepClone());
        }
    }

    /// <inheritdoc />
    public override CheckVerdict Check(IReadOnlyList<HistoryEvent> history) => Verdict(LinearizabilityChecker.CheckRegisters(history, CheckerOptions));

    /// <summary>A linearizability result as a <see cref="CheckVerdict"/>: one problem per key not linearizable or undecided,
    /// naming the operations that could not come next.</summary>
    /// <param name="result">The result.</param>
    /// <returns>The verdict.</returns>
    public static CheckVerdict Verdict(LinearizabilityResult result)
    {
        ArgumentNullException.ThrowIfNull(result);
        var problems = result.Problems
            .Select(k => new CheckProblem(
                k.Outcome == LinearizabilityOutcome.NotLinearizable ? "not-linearizable" : "undecided",
                k.Explanation ?? k.ToString(),
                [.. (k.Blocking is null ? [] : new[] { k.Blocking }).Concat(k.Unplaced.Select(u => u.Operation)).Distinct()]))
            .ToList();
        return CheckVerdict.From("register", result.ToString().Split('\n')[0], problems);
    }

    private static JsonValue? Json(long? value) => value is { } v ? JsonValue.Create(v) : null;
}
