using Microsoft.Data.Sqlite;
using Microsoft.Extensions.Logging;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence;

/// <summary>
/// Carries a store that earlier managers kept in SQLite into its append-only file, once. The new file is written under a
/// temporary name and renamed into place whole, and the old file is renamed <c>&lt;name&gt;.imported</c> only after
/// that: a crash at any step leaves either the old file alone (the import runs again) or the new file complete (only
/// the rename of the old one is left to do).
/// </summary>
internal static partial class SqliteImport
{
    private const long BatchBytes = 64L * 1024 * 1024;

    /// <summary>
    /// Imports <paramref name="legacyFileName"/> of <paramref name="directory"/> into <paramref name="path"/> if there is
    /// one to import: <paramref name="copy"/> reads the old file and writes each record it keeps (in file order); what
    /// it returns is logged.
    /// </summary>
    /// <exception cref="CheckpointStoreException">The old file cannot be read; the message says what to do.</exception>
    public static void Run(string directory, string legacyFileName, string path, ILogger logger, Func<SqliteConnection, Action<NewRecord>, string> copy)
    {
        var legacy = Path.Combine(directory, legacyFileName);
        if (!File.Exists(legacy))
        {
            return;
        }

        if (!File.Exists(path))
        {
            var temporary = path + ".import";
            File.Delete(temporary);
            string summary;
            using (var file = StreamLogFile.Open(temporary, _ => { }, logger))
            {
                var batch = new List<NewRecord>();
                var bytes = 0L;
                try
                {
                    using var connection = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = legacy, Mode = SqliteOpenMode.ReadOnly, Pooling = false }.ToString());
                    connection.Open();
                    summary = copy(connection, record =>
                    {
                        batch.Add(record);
                        bytes += record.Length;
                        if (bytes >= BatchBytes)
                        {
                            Flush(file, batch);
                            bytes = 0;
                        }
                    });
                }
                catch (SqliteException e)
                {
                    throw new CheckpointStoreException(
                        $"The old store {legacy} could not be read to import it ({e.Message}). Move it aside to start with an empty store, or repair it with the sqlite3 tool, then start the manager again.",
                        e);
                }

                Flush(file, batch);
                // A record imported with its damage must not sit in the last commit, which a reopen would cut as torn.
                file.Seal();
            }

            File.Move(temporary, path);
            DiskSync.FlushDirectory(directory);
            LogImported(logger, legacy, path, summary);
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

    /// <summary>The data CRC32 to import an entry with: the damage an entry had in the old file stays detectable in the new one.</summary>
    public static uint DataCrc(byte[] data, bool sound) =>
        sound ? System.IO.Hashing.Crc32.HashToUInt32(data) : ~System.IO.Hashing.Crc32.HashToUInt32(data);

    private static void Flush(StreamLogFile file, List<NewRecord> batch)
    {
        if (batch.Count > 0)
        {
            file.Append(batch);
            batch.Clear();
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Imported {Legacy} into {Path}: {Summary}")]
    private static partial void LogImported(ILogger logger, string legacy, string path, string summary);
}
