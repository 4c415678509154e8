using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;

namespace Quintet.Persistence;

/// <summary>
/// One kind of checkpoint store a host offers under a name that the setting <c>Quintet:Store:Kind</c> may choose: how to
/// make the store, what its settings must satisfy, and whether isolated workers open it too. A kind's own settings live
/// in the section <c>Quintet:Store:&lt;name&gt;</c> (configuration keys ignore case).
/// </summary>
public sealed class CheckpointStoreKind
{
    /// <summary>A kind named <paramref name="name"/> whose store <paramref name="create"/> makes.</summary>
    /// <param name="name">The name <c>Quintet:Store:Kind</c> chooses it by, in any case.</param>
    /// <param name="create">
    /// Makes the store, once, from the host's services; the container owns and disposes it (which commits the writes
    /// still queued).
    /// </param>
    public CheckpointStoreKind(string name, Func<IServiceProvider, ICheckpointStore> create)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(create);
        Name = name;
        Create = create;
    }

    /// <summary>The name <c>Quintet:Store:Kind</c> chooses this kind by, in any case.</summary>
    public string Name { get; }

    /// <summary>Makes the store from the host's services.</summary>
    public Func<IServiceProvider, ICheckpointStore> Create { get; }

    /// <summary>
    /// Registers the services <see cref="Create"/> needs (a replica, a connection pool), only once this kind is chosen,
    /// so that a host that chose another kind neither makes nor sees them. Null when it needs none.
    /// </summary>
    public Action<IServiceCollection>? AddServices { get; init; }

    /// <summary>
    /// The type the section <c>Quintet:Store:&lt;name&gt;</c> binds to, so that a host can report a misspelt setting
    /// there; null when the kind has no section of its own.
    /// </summary>
    public Type? SettingsType { get; init; }

    /// <summary>
    /// What is wrong with the kind's settings in the host's whole configuration, each message naming its setting; the
    /// host checks it at startup when the kind is chosen. Null when there is nothing to check.
    /// </summary>
    public Func<IConfiguration, IEnumerable<string>>? Validate { get; init; }

    /// <summary>
    /// True for a store every process of the cluster reaches alike (a database): an isolated worker then opens the same
    /// store with the manager's <c>Quintet:Store</c> settings, instead of a local store in its own data folder.
    /// </summary>
    public bool SharedWithWorkers { get; init; }
}
