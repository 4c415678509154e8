using Quintet.Components;

namespace Samples.Counter;

/// <summary>
/// The class factory of counters made with <c>CreateInstance</c> (when the QoS spec says <c>instancing: fresh</c>):
/// keys that say what they are, and each new counter on the manager the client asked.
/// </summary>
public sealed class CounterFactory : ClassFactory<CounterComponent>
{
    /// <inheritdoc />
    public override string NewKey(CreateInstanceContext context) => "counter-" + Guid.NewGuid().ToString("N")[..12];

    /// <inheritdoc />
    public override string? Place(CreateInstanceContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        return context.CallingManager;
    }
}
