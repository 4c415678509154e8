using System.IO.Hashing;
using Quintet.Persistence.Storage;

namespace Quintet.Persistence.PostgreSql;

/// <summary>What a queued write does.</summary>
internal enum PostgresWriteKind
{
    Checkpoint,
    Record,
    Truncate,
    Delete,
}

/// <summary>One write waiting for the <see cref="PostgresGroupCommit"/> loop.</summary>
internal sealed class PostgresWrite : PendingWrite
{
    public PostgresWrite(PostgresWriteKind kind, string stream, ReadOnlyMemory<byte> data, Crc32? dataCrc, CancellationToken cancellationToken)
        : base(cancellationToken)
    {
        Kind = kind;
        Stream = stream;
        Data = data;
        DataCrc = dataCrc;
    }

    public PostgresWriteKind Kind { get; }

    public string Stream { get; }

    /// <summary>The checkpoint or record bytes; empty for truncate and delete.</summary>
    public ReadOnlyMemory<byte> Data { get; }

    /// <summary>The CRC32 of <see cref="Data"/> alone, completed with the position once the loop assigns it.</summary>
    public Crc32? DataCrc { get; }

    public bool IsEntry => Kind is PostgresWriteKind.Checkpoint or PostgresWriteKind.Record;
}
