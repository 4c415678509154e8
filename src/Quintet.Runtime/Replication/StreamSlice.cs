namespace Quintet.Runtime.Replication;

/// <summary>A read-only view of a stream from <c>start</c> to its end, whose own position and length start there.</summary>
internal sealed class StreamSlice(Stream inner, long start, bool ownsInner) : Stream
{
    public override bool CanRead => true;

    public override bool CanSeek => true;

    public override bool CanWrite => false;

    public override long Length => inner.Length - start;

    public override long Position
    {
        get => inner.Position - start;
        set => inner.Position = value + start;
    }

    public override int Read(byte[] buffer, int offset, int count) => inner.Read(buffer, offset, count);

    public override int Read(Span<byte> buffer) => inner.Read(buffer);

    public override long Seek(long offset, SeekOrigin origin) => origin == SeekOrigin.Begin
        ? inner.Seek(offset + start, SeekOrigin.Begin) - start
        : inner.Seek(offset, origin) - start;

    public override void Flush()
    {
        // Read-only.
    }

    public override void SetLength(long value) => throw new NotSupportedException();

    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

    protected override void Dispose(bool disposing)
    {
        if (disposing && ownsInner)
        {
            inner.Dispose();
        }

        base.Dispose(disposing);
    }
}

/// <summary>A durable machine's snapshot for a transfer: the 8-byte position of the command order it stands at, then the state's capture.</summary>
internal sealed class PositionedSnapshot(long position, IStateSnapshot state) : IStateSnapshot
{
    private readonly byte[] _header = Header(position);

    /// <summary>Reads the position from the start of a transferred snapshot and returns the state's part.</summary>
    public static (long Position, Stream State) Split(Stream snapshot)
    {
        Span<byte> header = stackalloc byte[sizeof(long)];
        snapshot.ReadExactly(header);
        return (System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(header), new StreamSlice(snapshot, snapshot.Position, ownsInner: false));
    }

    public long Length => _header.Length + state.Length;

    public int Read(long offset, Span<byte> destination)
    {
        var copied = 0;
        if (offset < _header.Length)
        {
            var count = (int)Math.Min(_header.Length - offset, destination.Length);
            _header.AsSpan((int)offset, count).CopyTo(destination);
            copied = count;
        }

        return copied + state.Read(Math.Max(0, offset - _header.Length), destination[copied..]);
    }

    public void Dispose() => state.Dispose();

    private static byte[] Header(long position)
    {
        var header = new byte[sizeof(long)];
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(header, position);
        return header;
    }
}
