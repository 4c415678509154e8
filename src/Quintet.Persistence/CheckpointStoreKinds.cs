using System.Diagnostics.CodeAnalysis;

namespace Quintet.Persistence;

/// <summary>
/// The checkpoint store kinds a host offers, by name in any case: the one registry that <c>Quintet:Store:Kind</c> is
/// resolved against. A host gets it with
/// <see cref="CheckpointStoreKindsServiceCollectionExtensions.GetCheckpointStoreKinds"/>; plug-ins add their kind with
/// <see cref="CheckpointStoreKindsServiceCollectionExtensions.AddCheckpointStoreKind(Microsoft.Extensions.DependencyInjection.IServiceCollection, CheckpointStoreKind)"/>.
/// </summary>
public sealed class CheckpointStoreKinds
{
    // In registration order, so that a message listing the kinds names the built-ins first.
    private readonly List<CheckpointStoreKind> _kinds = [];

    /// <summary>The names of the kinds registered, in registration order.</summary>
    public IReadOnlyList<string> Names => [.. _kinds.Select(k => k.Name)];

    /// <summary>The kinds registered, in registration order.</summary>
    public IReadOnlyList<CheckpointStoreKind> All => [.. _kinds];

    /// <summary>
    /// Adds <paramref name="kind"/>, in place of a kind of the same name if there is one: the last registration wins, as
    /// with services.
    /// </summary>
    public void Add(CheckpointStoreKind kind)
    {
        ArgumentNullException.ThrowIfNull(kind);
        var index = _kinds.FindIndex(k => Same(k.Name, kind.Name));
        if (index >= 0)
        {
            _kinds[index] = kind;
        }
        else
        {
            _kinds.Add(kind);
        }
    }

    /// <summary>Finds the kind named <paramref name="name"/>, in any case.</summary>
    public bool TryGet(string? name, [NotNullWhen(true)] out CheckpointStoreKind? kind)
    {
        kind = name is null ? null : _kinds.Find(k => Same(k.Name, name));
        return kind is not null;
    }

    private static bool Same(string a, string b) => string.Equals(a, b, StringComparison.OrdinalIgnoreCase);
}
