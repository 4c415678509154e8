using Quintet.Persistence.PostgreSql;

namespace Quintet.Manager.Configuration;

/// <summary>Where the manager keeps component checkpoints and logs: the <c>Quintet:Store</c> configuration section.</summary>
public sealed class StoreOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Store";

    /// <summary>The <see cref="Kind"/> of a store in a SQLite file in each manager's data folder.</summary>
    public const string LocalKind = "local";

    /// <summary>The <see cref="Kind"/> of a store in a PostgreSQL database that all managers share.</summary>
    public const string PostgreSqlKind = "postgresql";

    /// <summary>
    /// Which store: <c>local</c> (a SQLite file per manager) or <c>postgresql</c> (one database shared by every manager,
    /// set in <see cref="PostgreSql"/>). Case does not matter.
    /// <value>Default: <c>local</c>.</value>
    /// </summary>
    public string Kind { get; set; } = LocalKind;

    /// <summary>The PostgreSQL store's settings (<c>Quintet:Store:PostgreSql</c>), used when <see cref="Kind"/> is <c>postgresql</c>.</summary>
    public PostgresCheckpointStoreOptions PostgreSql { get; set; } = new();

    /// <summary>True when <see cref="Kind"/> names the PostgreSQL store.</summary>
    public bool IsPostgreSql => string.Equals(Kind, PostgreSqlKind, StringComparison.OrdinalIgnoreCase);

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

    /// <summary>What is wrong with these settings, each message naming the setting; empty when they are valid.</summary>
    public IReadOnlyList<string> Validate()
    {
        if (IsPostgreSql)
        {
            return PostgreSql.Validate($"{SectionName}:PostgreSql");
        }

        return string.Equals(Kind, LocalKind, StringComparison.OrdinalIgnoreCase)
            ? []
            : [$"{SectionName}:Kind: '{Kind}' is not a store kind; use '{LocalKind}' or '{PostgreSqlKind}'."];
    }
}
