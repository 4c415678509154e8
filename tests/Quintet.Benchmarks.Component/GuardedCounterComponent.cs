using ProtoBuf;
using Quintet.Components;

namespace Quintet.Benchmarks.Component;

/// <summary>
/// A counter only members of the package role <c>bench-caller</c> may call: <c>calls --tls</c> measures component calls
/// with role enforcement on the way. Declaring a role makes every operation of the package role-checked on a secured
/// cluster; the other benchmarks run with security off, where nothing is checked.
/// </summary>
[ComponentContract("quintet.bench.GuardedCounter"), ComponentRoles(GuardedCounterRoles.Caller)]
public interface IGuardedCounter
{
    /// <summary>Adds to this instance's count and returns it.</summary>
    Task<GuardedCount> AddAsync(GuardedAdd request, CancellationToken cancellationToken);
}

/// <summary>The role that opens <see cref="IGuardedCounter"/>.</summary>
public static class GuardedCounterRoles
{
    /// <summary>The package role a caller must be a member of.</summary>
    public const string Caller = "bench-caller";
}

/// <summary>How much to add.</summary>
[ProtoContract]
public sealed class GuardedAdd
{
    /// <summary>The amount.</summary>
    [ProtoMember(1)]
    public long Amount { get; set; }
}

/// <summary>The count after an add.</summary>
[ProtoContract]
public sealed class GuardedCount
{
    /// <summary>The count.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }
}

/// <summary>The counter behind <see cref="IGuardedCounter"/>: in memory, like the Counter sample.</summary>
public sealed class GuardedCounterComponent : Quintet.Components.Component, IGuardedCounter
{
    private long _value;

    /// <inheritdoc />
    public Task<GuardedCount> AddAsync(GuardedAdd request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _value = checked(_value + request.Amount);
        return Task.FromResult(new GuardedCount { Value = _value });
    }
}
