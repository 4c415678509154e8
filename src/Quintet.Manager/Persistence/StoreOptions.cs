using Quintet.Persistence;

namespace Quintet.Manager.Persistence;

/// <summary>
/// Where component instances keep their checkpoints and logs, bound from the <c>Quintet:Store</c> configuration section.
/// The store kinds a manager offers are registered in its <see cref="CheckpointStoreKinds"/>; a kind's own settings live
/// in <c>Quintet:Store:&lt;kind&gt;</c>.
/// </summary>
public sealed class StoreOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Store";

    /// <summary>The embedded store replicated across the managers: the default.</summary>
    public const string Replicated = "replicated";

    /// <summary>Each manager's own append-only file, not replicated: an instance's stream lives on its manager only.</summary>
    public const string Local = "local";

    // Kinds that live in packages of their own: what to add when the setting names one a host has not registered.
    private static readonly Dictionary<string, string> PlugIns = new(StringComparer.OrdinalIgnoreCase)
    {
        ["postgresql"] = "the PostgreSQL store comes with the Quintet.Store.PostgreSql package: reference it and call services.AddPostgreSqlCheckpointStore() in UseQuintetManager's configure action (the quintet-manager executable does)",
    };

    /// <summary>
    /// The store kind: <c>replicated</c> (a write is acknowledged once a majority of the managers hold it on disk),
    /// <c>local</c> (each manager's own file), or a kind a plug-in registered (<c>postgresql</c> in the quintet-manager
    /// executable).
    /// <value>Default: <c>replicated</c>.</value>
    /// </summary>
    public string Kind { get; set; } = Replicated;

    /// <summary>
    /// How many managers the cluster has, for the replicated store's majority: a write is acknowledged once more than
    /// half of this many (or of the managers this one has seen, if more) hold it. Set it to the cluster's size so that
    /// a manager started alone never counts itself a majority.
    /// <value>Default: 0, the managers seen so far (remembered on disk).</value>
    /// </summary>
    public int Managers { get; set; }

    /// <summary>
    /// How long a replicated write or a seal waits for a majority before it fails with a
    /// <see cref="CheckpointStoreException"/>.
    /// <value>Default: 10 s.</value>
    /// </summary>
    public TimeSpan ReplicationTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>True when <see cref="Kind"/> is <paramref name="kind"/>, in any case.</summary>
    public bool IsKind(string kind) => string.Equals(Kind, kind, StringComparison.OrdinalIgnoreCase);

    /// <summary>
    /// The problems with these settings, each naming its setting; empty if none. <see cref="Kind"/> must be one of
    /// <paramref name="kinds"/>, whose own settings in <paramref name="configuration"/> are checked too; the manager's
    /// built-in kinds alone when <paramref name="kinds"/> is null.
    /// </summary>
    public IEnumerable<string> Validate(CheckpointStoreKinds? kinds = null, IConfiguration? configuration = null)
    {
        kinds ??= CheckpointStoreServiceCollectionExtensions.BuiltInKinds();
        if (!kinds.TryGet(Kind, out var kind))
        {
            var available = string.Join(", ", kinds.Names.Select(n => IsDefault(n) ? $"'{n}' (the default)" : $"'{n}'"));
            yield return PlugIns.TryGetValue(Kind, out var plugIn)
                ? $"{SectionName}:Kind: '{Kind}' is not a store kind this manager offers; use {available}, or add it: {plugIn}."
                : $"{SectionName}:Kind: '{Kind}' is not a store kind; use {available}.";
        }
        else if (kind.Validate is { } validate && configuration is not null)
        {
            foreach (var failure in validate(configuration))
            {
                yield return failure;
            }
        }

        if (Managers is < 0 or > 1000)
        {
            yield return $"{SectionName}:Managers: {Managers} is not a cluster size; use 0 (the managers seen so far) or the number of managers, 1 to 1000.";
        }

        if (ReplicationTimeout <= TimeSpan.Zero || ReplicationTimeout > TimeSpan.FromMinutes(10))
        {
            yield return $"{SectionName}:ReplicationTimeout: {ReplicationTimeout} must be above zero and at most 10 minutes.";
        }
    }

    /// <summary>
    /// The store settings of <paramref name="configuration"/> as environment variables (<c>Quintet__Store__Kind</c>,
    /// <c>Quintet__Store__PostgreSql__ConnectionString</c>, ...), for an isolated worker to open the same shared store.
    /// </summary>
    public IReadOnlyDictionary<string, string> ToEnvironment(IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        var section = configuration.GetSection(SectionName);
        var variables = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (key, value) in section.AsEnumerable(makePathsRelative: true))
        {
            if (value is not null && !string.Equals(key, nameof(Kind), StringComparison.OrdinalIgnoreCase))
            {
                variables["Quintet__Store__" + key.Replace(":", "__", StringComparison.Ordinal)] = value;
            }
        }

        // The kind may be the default, set nowhere: the worker must not fall back to its own.
        variables["Quintet__Store__" + nameof(Kind)] = Kind;
        return variables;
    }

    private static bool IsDefault(string kind) => string.Equals(kind, Replicated, StringComparison.OrdinalIgnoreCase);
}
