using Npgsql;

namespace Quintet.Persistence.PostgreSql;

/// <summary>The settings of <see cref="PostgresCheckpointStore"/>: the section <c>Quintet:Store:PostgreSql</c>.</summary>
public sealed class PostgresCheckpointStoreOptions
{
    /// <summary>The configuration section these settings are read from.</summary>
    public const string SectionName = "Quintet:Store:PostgreSql";

    /// <summary>The store kind's name, which <c>Quintet:Store:Kind</c> chooses it by (its settings are in <see cref="SectionName"/>).</summary>
    public const string KindName = "postgresql";

    /// <summary>The largest checkpoint or record accepted unless <see cref="MaxRecordBytes"/> says otherwise: 64 MiB, as the local store.</summary>
    public const int DefaultMaxRecordBytes = 64 * 1024 * 1024;

    /// <summary>
    /// An Npgsql connection string, for example <c>Host=db1;Port=5432;Database=quintet;Username=quintet;Password=...</c>.
    /// Every manager of a cluster names the same database: that is what lets a new owner recover an instance whose
    /// manager died.
    /// <value>Default: none; required when the store kind is <c>postgresql</c>.</value>
    /// </summary>
    public string? ConnectionString { get; set; }

    /// <summary>
    /// The largest checkpoint or record accepted, in bytes; larger writes fail with <see cref="CheckpointStoreException"/>.
    /// <value>Default: 67108864 (64 MiB). At most 1 GiB less 1 KiB, PostgreSQL's limit for one value.</value>
    /// </summary>
    public int MaxRecordBytes { get; set; } = DefaultMaxRecordBytes;

    /// <summary>The largest <see cref="MaxRecordBytes"/> accepted: a <c>bytea</c> value holds at most 1 GiB.</summary>
    public const int LimitOfMaxRecordBytes = (1024 * 1024 * 1024) - 1024;

    /// <summary>
    /// What is wrong with these settings, each message naming the setting under <paramref name="sectionName"/>; empty when
    /// they are valid. Reaching the server is not checked here: a manager starts while its database is down.
    /// </summary>
    public IReadOnlyList<string> Validate(string sectionName = SectionName)
    {
        var failures = new List<string>();
        if (string.IsNullOrWhiteSpace(ConnectionString))
        {
            failures.Add($"{sectionName}:ConnectionString: is required for the PostgreSQL store, for example 'Host=db1;Database=quintet;Username=quintet;Password=...'.");
        }
        else
        {
            try
            {
                var builder = new NpgsqlConnectionStringBuilder(ConnectionString);
                if (string.IsNullOrWhiteSpace(builder.Host))
                {
                    failures.Add($"{sectionName}:ConnectionString: names no Host; add 'Host=<server>'.");
                }
            }
            catch (ArgumentException e)
            {
                // The message names the bad keyword; the value itself may hold a password, so it is not repeated.
                failures.Add($"{sectionName}:ConnectionString: is not a valid Npgsql connection string: {e.Message}");
            }
        }

        if (MaxRecordBytes is <= 0 or > LimitOfMaxRecordBytes)
        {
            failures.Add($"{sectionName}:MaxRecordBytes: must be from 1 to {LimitOfMaxRecordBytes}, was {MaxRecordBytes}.");
        }

        return failures;
    }
}
