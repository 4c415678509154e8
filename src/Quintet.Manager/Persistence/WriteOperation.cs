using System.IO.Hashing;
using Quintet.Runtime.Storage;

namespace Quintet.Manager.Persistence;

/// <summary>What a queued write does.</summary>
internal enum WriteKind
{
    Checkpoint,
    Record,
    Truncate,
    Delete,
}

/// <summary>One write waiting for the <see cref="GroupCommitWriter"/>'s thread.</summary>
internal sealed class WriteOperation : PendingWrite
{
    public WriteOperation(WriteKind kind, string stream, byte[]? data, Crc32? dataCrc, CancellationToken cancellationToken)
        : base(cancellationToken)
    {
        Kind = kind;
        Stream = stream;
        Data = data;
        DataCrc = dataCrc;
    }

    public WriteKind Kind { get; }

    public string Stream { get; }

    /// <summary>The checkpoint or record bytes; none for truncate and delete.</summary>
    public byte[]? Data { get; }

    /// <summary>The CRC32 of <see cref="Data"/> alone, completed with the position by the writer.</summary>
    public Crc32? DataCrc { get; }

    public long Bytes => Data?.LongLength ?? 0;
}
