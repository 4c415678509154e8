using Quintet.Components;

namespace Factory1;

/// <summary>
/// The class factory of documents: found by the build, which names it in the package manifest. It is called
/// concurrently, so it keeps no mutable state.
/// </summary>
public sealed class DocumentFactory : ClassFactory<DocumentComponent>
{
    /// <summary>Keys that say what they are: <c>doc-</c> and 12 hex digits.</summary>
    public override string NewKey(CreateInstanceContext context) => "doc-" + Guid.NewGuid().ToString("N")[..12];

    /// <summary>Each new document on the manager the client asked (null would leave it to the QoS placement).</summary>
    public override string? Place(CreateInstanceContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        return context.CallingManager;
    }
}
