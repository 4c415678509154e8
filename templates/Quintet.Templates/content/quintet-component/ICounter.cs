using ProtoBuf;
using Quintet.Components;

namespace Component1;

/// <summary>A counter per key: add to it, read it. The service name is what clients call on the wire.</summary>
[ComponentContract("Component1.Counter")]
public interface ICounter
{
    /// <summary>Adds <see cref="AddRequest.Amount"/> and returns the new value.</summary>
    Task<CounterValue> AddAsync(AddRequest request, CancellationToken cancellationToken);

    /// <summary>Returns the current value.</summary>
    Task<CounterValue> GetAsync(GetRequest request, CancellationToken cancellationToken);
}

/// <summary>How much to add.</summary>
[ProtoContract]
public sealed class AddRequest
{
    /// <summary>The amount; may be negative.</summary>
    [ProtoMember(1)]
    public long Amount { get; set; }
}

/// <summary>Asks for the value.</summary>
[ProtoContract]
public sealed class GetRequest
{
}

/// <summary>A counter's value, and the manager that answered.</summary>
[ProtoContract]
public sealed class CounterValue
{
    /// <summary>The value.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }

    /// <summary>The node name of the manager hosting the instance.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;
}
