using Npgsql;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.PostgreSql;

/// <summary>
/// The store's tables, created on first use. Every manager of a cluster may start at once against an empty database, so
/// the creation runs under a transaction-scoped advisory lock: one creates, the others wait and then find the tables.
/// </summary>
internal static class PostgresSchema
{
    /// <summary>The table of checkpoints and records: one row per position of a stream.</summary>
    public const string Table = "quintet_checkpoints";

    /// <summary>One row: the schema version the tables were created with.</summary>
    public const string VersionTable = "quintet_checkpoints_schema";

    public const int Version = 1;

    // Any fixed number works; this one spells "QUINTET1" so that it is recognisable in pg_locks.
    private const long AdvisoryLockKey = 0x51_55_49_4E_54_45_54_31;

    /// <summary>Creates the tables if they are missing and checks their version.</summary>
    /// <returns>The server's <c>synchronous_commit</c> setting, which decides whether a commit is durable.</returns>
    /// <exception cref="CheckpointStoreException">The tables were created by a newer version of Quintet.</exception>
    public static async Task<string> EnsureAsync(NpgsqlDataSource dataSource, CancellationToken cancellationToken)
    {
        await using var connection = await dataSource.OpenConnectionAsync(cancellationToken);
        await using var transaction = await connection.BeginTransactionAsync(cancellationToken);
        await using (var create = new NpgsqlCommand(
            $"""
            SELECT pg_advisory_xact_lock({AdvisoryLockKey});
            CREATE TABLE IF NOT EXISTS {VersionTable} (version integer NOT NULL);
            INSERT INTO {VersionTable} (version) SELECT {Version} WHERE NOT EXISTS (SELECT 1 FROM {VersionTable});
            CREATE TABLE IF NOT EXISTS {Table} (
                stream text NOT NULL,
                position bigint NOT NULL,
                kind smallint NOT NULL,
                crc bigint NOT NULL,
                data bytea NOT NULL,
                PRIMARY KEY (stream, position));
            CREATE INDEX IF NOT EXISTS {Table}_checkpoints ON {Table} (stream, position) WHERE kind = {(short)EntryKind.Checkpoint};
            """,
            connection,
            transaction))
        {
            await create.ExecuteNonQueryAsync(cancellationToken);
        }

        int version;
        string synchronousCommit;
        await using (var check = new NpgsqlCommand(
            $"SELECT (SELECT MAX(version) FROM {VersionTable}), current_setting('synchronous_commit')",
            connection,
            transaction))
        await using (var reader = await check.ExecuteReaderAsync(cancellationToken))
        {
            await reader.ReadAsync(cancellationToken);
            version = reader.GetInt32(0);
            synchronousCommit = reader.GetString(1);
        }

        await transaction.CommitAsync(cancellationToken);
        if (version > Version)
        {
            throw new CheckpointStoreException(
                $"The PostgreSQL checkpoint store's tables in database '{connection.Database}' have schema version {version}, newer than this manager's {Version}; upgrade the manager.");
        }

        return synchronousCommit;
    }
}
