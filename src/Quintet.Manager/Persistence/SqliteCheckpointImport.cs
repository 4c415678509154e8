using Microsoft.Data.Sqlite;
using Quintet.Persistence;
using Quintet.Runtime.Storage;

namespace Quintet.Manager.Persistence;

/// <summary>
/// Carries a data folder's checkpoints from the SQLite file that earlier managers kept (<c>checkpoints.db</c>) into the
/// append-only file, once: what each stream's recovery reached (its last checkpoint and the records after it) keeps its
/// positions, and the old file is then renamed <c>checkpoints.db.imported</c>.
/// </summary>
/// <remarks>
/// The new file is written under a temporary name and renamed into place whole, and the old one is renamed only after
/// that: a crash at any step leaves either the old file alone (the import runs again) or the new file complete (only
/// the rename of the old one is left to do).
/// </remarks>
internal static partial class SqliteCheckpointImport
{
    /// <summary>The old store's file name.</summary>
    public const string LegacyFileName = "checkpoints.db";

    private const long BatchBytes = 64L * 1024 * 1024;

    // The old format's kinds (Quintet.Runtime.Storage.EntryKind) and the new file's.
    private const byte CheckpointKind = 1;
    private const byte RecordKind = 2;

    /// <summary>Imports <see cref="LegacyFileName"/> of <paramref name="directory"/> into <paramref name="path"/> if there is one to import.</summary>
    /// <exception cref="CheckpointStoreException">The old file cannot be read as a checkpoint store; the message says what to do.</exception>
    public static void Run(string directory, string path, ILogger logger)
    {
        var legacy = Path.Combine(directory, LegacyFileName);
        if (!File.Exists(legacy))
        {
            return;
        }

        if (!File.Exists(path))
        {
            var temporary = path + ".import";
            var (streams, entries, damaged) = Copy(legacy, temporary, logger);
            File.Move(temporary, path);
            DiskSync.FlushDirectory(directory);
            LogImported(logger, legacy, path, streams, entries, damaged);
        }

        foreach (var suffix in new[] { string.Empty, "-wal", "-shm" })
        {
            if (File.Exists(legacy + suffix))
            {
                File.Move(legacy + suffix, legacy + ".imported" + suffix, overwrite: true);
            }
        }

        DiskSync.FlushDirectory(directory);
    }

    private static (int Streams, long Entries, long Damaged) Copy(string legacy, string temporary, ILogger logger)
    {
        File.Delete(temporary);
        using var file = StreamLogFile.Open(temporary, _ => { }, logger);
        using var connection = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = legacy, Mode = SqliteOpenMode.ReadOnly, Pooling = false }.ToString());
        using var command = connection.CreateCommand();
        command.CommandText = $"""
            SELECT stream, position, kind, crc, data FROM entries AS e
            WHERE position >= COALESCE((SELECT MAX(position) FROM entries WHERE stream = e.stream AND kind = {(int)EntryKind.Checkpoint}), 1)
            ORDER BY stream, position
            """;
        var batch = new List<NewRecord>();
        var bytes = 0L;
        var streams = 0;
        var entries = 0L;
        var damaged = 0L;
        string? last = null;
        byte[] name = [];
        try
        {
            connection.Open();
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                var stream = reader.GetString(0);
                var position = reader.GetInt64(1);
                var kind = (EntryKind)reader.GetInt64(2);
                var crc = (uint)reader.GetInt64(3);
                var data = reader.GetFieldValue<byte[]>(4);
                if (stream != last)
                {
                    last = stream;
                    name = System.Text.Encoding.UTF8.GetBytes(stream);
                    streams++;
                }

                var dataCrc = System.IO.Hashing.Crc32.HashToUInt32(data);
                if (StorageChecksum.Of(data, stream, position, kind) != crc)
                {
                    // The damage stays where it was: this stream's recovery fails at this position, as it did before.
                    dataCrc = ~dataCrc;
                    damaged++;
                }

                batch.Add(new NewRecord(kind == EntryKind.Checkpoint ? CheckpointKind : RecordKind, name, position, data, dataCrc));
                entries++;
                bytes += data.Length;
                if (bytes >= BatchBytes)
                {
                    Flush(file, batch);
                    bytes = 0;
                }
            }
        }
        catch (SqliteException e)
        {
            throw new CheckpointStoreException(
                $"The old checkpoint store {legacy} could not be read to import it ({e.Message}). Move it aside to start with an empty store, or repair it with the sqlite3 tool, then start the manager again.",
                e);
        }

        Flush(file, batch);
        // A record imported with its damage must not sit in the last commit, which a reopen would cut as torn.
        file.Seal();
        return (streams, entries, damaged);
    }

    private static void Flush(StreamLogFile file, List<NewRecord> batch)
    {
        if (batch.Count > 0)
        {
            file.Append(batch, new long[batch.Count]);
            batch.Clear();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Imported the checkpoint store {Legacy} into {Path}: {Streams} streams, {Entries} checkpoints and records ({Damaged} failing their CRC32 check, kept so)")]
    private static partial void LogImported(ILogger logger, string legacy, string path, int streams, long entries, long damaged);
}
