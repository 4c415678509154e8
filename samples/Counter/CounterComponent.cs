using Quintet.Components;

namespace Samples.Counter;

/// <summary>One counter per key. Calls to an instance take turns, so the field needs no lock.</summary>
public sealed class CounterComponent : Component, ICounter
{
    private long _value;

    /// <inheritdoc />
    public Task<CounterValue> AddAsync(AddRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _value = checked(_value + request.Amount);
        return Task.FromResult(Current());
    }

    /// <inheritdoc />
    public Task<CounterValue> GetAsync(GetRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    private CounterValue Current() => new() { Value = _value, Manager = Context.Manager };
}
