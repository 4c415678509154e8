using Quintet.Persistence.PostgreSql;

namespace Quintet.Manager.Persistence;

/// <summary>
/// Where component instances keep their checkpoints and logs, bound from the <c>Quintet:Store</c> configuration section.
/// </summary>
public sealed class StoreOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Store";

    /// <summary>The embedded store replicated across the managers: the default.</summary>
    public const string Replicated = "replicated";

    /// <summary>Each manager's own append-only file, not replicated: an instance's stream lives on its manager only.</summary>
    public const string Local = "local";

    /// <summary>A PostgreSQL database every manager shares.</summary>
    public const string PostgreSqlKind = "postgresql";

    /// <summary>
    /// The store kind: <c>replicated</c> (a write is acknowledged once a majority of the managers hold it on disk),
    /// <c>local</c> (each manager's own file), or <c>postgresql</c>.
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
    /// <see cref="Quintet.Persistence.CheckpointStoreException"/>.
    /// <value>Default: 10 s.</value>
    /// </summary>
    public TimeSpan ReplicationTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>The PostgreSQL store's settings (<c>Quintet:Store:PostgreSql</c>), used when <see cref="Kind"/> is <c>postgresql</c>.</summary>
    public PostgresCheckpointStoreOptions PostgreSql { get; set; } = new();

    /// <summary>True when <see cref="Kind"/> names the PostgreSQL store.</summary>
    public bool IsPostgreSql => IsKind(PostgreSqlKind);

    /// <summary>True when <see cref="Kind"/> is <paramref name="kind"/>, in any case.</summary>
    public bool IsKind(string kind) => string.Equals(Kind, kind, StringComparison.OrdinalIgnoreCase);

    /// <summary>These settings as environment variables (<c>Quintet__Store__Kind</c>, ...), for a worker process to read.</summary>
    public IReadOnlyDictionary<string, string> ToEnvironment()
    {
        const string Prefix = "Quintet__Store__";
        var variables = new Dictionary<string, string>(StringComparer.Ordinal)
        {
            [Prefix + nameof(Kind)] = Kind,
            [Prefix + "PostgreSql__" + nameof(PostgresCheckpointStoreOptions.MaxRecordBytes)] = PostgreSql.MaxRecordBytes.ToString(System.Globalization.CultureInfo.InvariantCulture),
        };
        if (PostgreSql.ConnectionString is { } connectionString)
        {
            variables[Prefix + "PostgreSql__" + nameof(PostgresCheckpointStoreOptions.ConnectionString)] = connectionString;
        }

        return variables;
    }

    /// <summary>The problems with these settings, each naming its setting; empty if none.</summary>
    public IEnumerable<string> Validate()
    {
        if (!IsKind(Replicated) && !IsKind(Local) && !IsPostgreSql)
        {
            yield return $"{SectionName}:Kind: '{Kind}' is not a store kind; use '{Replicated}' (the default), '{Local}' or '{PostgreSqlKind}'.";
        }

        if (IsPostgreSql)
        {
            foreach (var failure in PostgreSql.Validate($"{SectionName}:PostgreSql"))
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
}
