using Quintet.Persistence.Storage;

namespace Quintet.Persistence;

/// <summary>What a queued write does.</summary>
internal enum WriteKind
{
    Checkpoint,
    Record,
    Truncate,
    Delete,
}

/// <summary>One write waiting for the <see cref="LocalCheckpointStore"/>'s writer thread.</summary>
internal sealed class WriteOperation(WriteKind kind, string stream, byte[] name, ReadOnlyMemory<byte> data, uint dataCrc, CancellationToken cancellationToken)
    : PendingWrite(cancellationToken)
{
    public WriteKind Kind => kind;

    public string Stream => stream;

    /// <summary>The stream's name in UTF-8.</summary>
    public byte[] Name => name;

    /// <summary>The checkpoint or record bytes; none for truncate and delete.</summary>
    public ReadOnlyMemory<byte> Data => data;

    /// <summary>The CRC32 of <see cref="Data"/>.</summary>
    public uint DataCrc => dataCrc;

    public long Bytes => data.Length;
}
