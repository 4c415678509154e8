namespace Quintet.Components;

/// <summary>
/// A 64-bit counter replicated on every manager that uses it, starting at zero. Updates are ordered through the managers
/// group and applied by every replica at the same place (linearizable): increments from many managers sum exactly.
/// <see cref="Value"/> is local (sequentially consistent); <see cref="ReadLinearizableAsync"/> waits for every update
/// ordered before it. An update that would overflow is refused alike at every replica.
/// </summary>
public interface ISharedCounter
{
    /// <summary>The counter's name.</summary>
    string Name { get; }

    /// <summary>The value in this replica.</summary>
    long Value { get; }

    /// <summary>The position in the order of the last command this replica applied (0 before any).</summary>
    long Position { get; }

    /// <summary>The value after every update ordered before this call.</summary>
    Task<long> ReadLinearizableAsync(CancellationToken cancellationToken = default);

    /// <summary>Adds <paramref name="delta"/> (which may be negative) and returns the value it made.</summary>
    /// <exception cref="OverflowException">The sum would pass <see cref="long.MaxValue"/> or <see cref="long.MinValue"/>; nothing changed.</exception>
    Task<long> AddAsync(long delta, CancellationToken cancellationToken = default);

    /// <summary>Sets the counter to <paramref name="value"/> only if it holds <paramref name="expected"/>; true when it did.</summary>
    Task<bool> CompareAndSetAsync(long expected, long value, CancellationToken cancellationToken = default);

    /// <summary>Subscribes to the changes of value this replica applies from now on, in the order of every replica.</summary>
    ISharedWatch<CounterChange> Watch();
}
