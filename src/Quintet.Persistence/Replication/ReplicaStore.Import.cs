using System.IO.Hashing;
using System.Text;
using Microsoft.Data.Sqlite;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.Replication;

/// <summary>The import, once, of the SQLite replica (<c>replica.db</c>) that earlier versions kept.</summary>
public sealed partial class ReplicaStore
{
    private void Import(string directory)
    {
        try
        {
            SqliteImport.Run(directory, LegacyFileName, Path, _logger, ImportLegacy);
        }
        catch (CheckpointStoreException e)
        {
            // The old file is damaged below the rows: as with a damaged file of today, keep it for inspection, start
            // empty, and let the writers refill the replica.
            var legacy = System.IO.Path.Combine(directory, LegacyFileName);
            var aside = $"{legacy}.corrupt-{DateTime.UtcNow:yyyyMMddHHmmss}";
            LogCorruptFile(_logger, e, legacy, aside);
            StoreMetrics.Corruption(Name);
            foreach (var suffix in new[] { string.Empty, "-wal", "-shm" })
            {
                if (File.Exists(legacy + suffix))
                {
                    File.Move(legacy + suffix, aside + suffix);
                }
            }
        }
    }

    private static string ImportLegacy(SqliteConnection connection, Action<NewRecord> write)
    {
        var check = (string?)Scalar(connection, "PRAGMA quick_check");
        if (!string.Equals(check, "ok", StringComparison.Ordinal))
        {
            throw new CheckpointStoreException($"The old replica {connection.DataSource} fails SQLite's check: {check}.");
        }

        var streams = 0;
        var entries = 0L;
        var damaged = 0L;
        using (var command = connection.CreateCommand())
        {
            command.CommandText = "SELECT stream, promised, synced, last_position, version, crc FROM streams ORDER BY stream";
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                var stream = reader.GetString(0);
                var state = new StreamState(reader.GetInt64(1), reader.GetInt64(2), reader.GetInt64(3), reader.GetInt64(4));
                var sound = (uint)reader.GetInt64(5) == LegacyStateCrc(stream, state);
                damaged += sound ? 0 : 1;
                var data = StateData(state);
                write(new NewRecord(StateKind, Encoding.UTF8.GetBytes(stream), 0, data, SqliteImport.DataCrc(data, sound)));
                streams++;
            }
        }

        using (var command = connection.CreateCommand())
        {
            command.CommandText = $"""
                SELECT stream, position, kind, crc, data FROM entries AS e
                WHERE position >= COALESCE((SELECT MAX(position) FROM entries WHERE stream = e.stream AND kind = {(int)EntryKind.Checkpoint}), 1)
                ORDER BY stream, position
                """;
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                var stream = reader.GetString(0);
                var position = reader.GetInt64(1);
                var kind = (EntryKind)reader.GetInt64(2);
                var data = reader.GetFieldValue<byte[]>(4);
                var sound = StorageChecksum.Of(data, stream, position, kind) == (uint)reader.GetInt64(3);
                damaged += sound ? 0 : 1;
                entries++;
                write(new NewRecord(kind == EntryKind.Checkpoint ? CheckpointKind : RecordKind, Encoding.UTF8.GetBytes(stream), position, data, SqliteImport.DataCrc(data, sound)));
            }
        }

        using (var command = connection.CreateCommand())
        {
            command.CommandText = "SELECT name FROM managers ORDER BY name";
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                write(new NewRecord(ManagerKind, Encoding.UTF8.GetBytes(reader.GetString(0)), 0, default, 0));
            }
        }

        return $"{streams} streams, {entries} checkpoints and records ({damaged} failing their CRC32 check, kept so)";
    }

    private static object? Scalar(SqliteConnection connection, string text)
    {
        using var command = connection.CreateCommand();
        command.CommandText = text;
        return command.ExecuteScalar();
    }

    /// <summary>The CRC32 the old SQLite replica kept beside a stream's state row.</summary>
    private static uint LegacyStateCrc(string stream, StreamState state)
    {
        var crc = new Crc32();
        crc.Append(Encoding.UTF8.GetBytes(stream));
        crc.Append(StateData(state));
        return crc.GetCurrentHashAsUInt32();
    }
}
