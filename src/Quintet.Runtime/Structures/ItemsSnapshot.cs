using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The capture of a structure made of many items, taken as an array of references and serialized only as it is read,
/// off the machine's lock. Taking it costs a reference per item; serializing the state while the group's commands
/// waited cost a copy of every byte, and, for a state of hundreds of MB, a pause of most of a second at every replica
/// that captured it.
/// </summary>
/// <remarks>
/// The bytes are a protobuf message: the scalar fields first (<c>prefix</c>, serialized at capture), then each item as
/// one length-delimited field. Items are put in their order (<see cref="Order"/>) at the first read, from the reader's
/// thread. The items must not change while the capture lives.
/// </remarks>
internal abstract class ItemsSnapshot : IStateSnapshot
{
    private readonly Lock _gate = new();
    private readonly byte[] _prefix;
    private readonly int _count;
    private readonly Action? _released;
    private long[]? _starts;
    private byte[] _encoded = [];
    private int _encodedItem = -1;
    private bool _disposed;

    /// <param name="prefix">The message's other fields, serialized.</param>
    /// <param name="count">How many items.</param>
    /// <param name="itemBytes">The items' encoded size, checked when the capture is first read.</param>
    /// <param name="released">Called once, at <see cref="Dispose"/>.</param>
    protected ItemsSnapshot(byte[] prefix, int count, long itemBytes, Action? released)
    {
        _prefix = prefix;
        _count = count;
        _released = released;
        Length = prefix.Length + itemBytes;
    }

    /// <inheritdoc />
    public long Length { get; }

    /// <inheritdoc />
    public int Read(long offset, Span<byte> destination)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(offset);
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var starts = _starts ??= Layout();
            var copied = 0;
            if (offset < _prefix.Length)
            {
                copied = (int)Math.Min(_prefix.Length - offset, destination.Length);
                _prefix.AsSpan((int)offset, copied).CopyTo(destination);
            }

            var item = Array.BinarySearch(starts, offset + copied);
            item = item >= 0 ? item : ~item - 1;
            while (copied < destination.Length && item < _count)
            {
                var within = (int)(offset + copied - starts[item]);
                var size = (int)(starts[item + 1] - starts[item]);
                var room = destination.Length - copied;
                if (within == 0 && size <= room)
                {
                    // The common case for small items: written straight into the reader's buffer.
                    WriteChecked(item, destination.Slice(copied, size));
                    copied += size;
                }
                else
                {
                    var count = Math.Min(size - within, room);
                    Encoded(item, size).Slice(within, count).CopyTo(destination[copied..]);
                    copied += count;
                }

                item++;
            }

            return copied;
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        lock (_gate)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            _encoded = [];
        }

        _released?.Invoke();
    }

    /// <summary>Puts the items in the order they are written (called once, at the first read).</summary>
    protected abstract void Order();

    /// <summary>The encoded size of an item, its field's tag and length included.</summary>
    protected abstract int SizeOf(int item);

    /// <summary>Writes an item, its field's tag and length included, filling <paramref name="destination"/>; returns the bytes written.</summary>
    protected abstract int Write(int item, Span<byte> destination);

    /// <summary>Writes a varint of protobuf's wire format; returns its length.</summary>
    protected static int WriteVarint(Span<byte> destination, ulong value)
    {
        var at = 0;
        while (value >= 0x80)
        {
            destination[at++] = (byte)(value | 0x80);
            value >>= 7;
        }

        destination[at++] = (byte)value;
        return at;
    }

    private long[] Layout()
    {
        Order();
        var starts = new long[_count + 1];
        starts[0] = _prefix.Length;
        for (var i = 0; i < _count; i++)
        {
            starts[i + 1] = starts[i] + SizeOf(i);
        }

        // The size given at capture and the items disagree only through a bug; serving a wrong length would corrupt
        // the transfer at the receiver, so the capture refuses to be read.
        return starts[^1] == Length ? starts : throw new InvalidOperationException($"A capture of {Length} bytes came to {starts[^1]} when laid out.");
    }

    /// <summary>An item larger than what is left of a read: encoded once, kept for the reads that follow it.</summary>
    private ReadOnlySpan<byte> Encoded(int item, int size)
    {
        if (_encodedItem != item)
        {
            if (_encoded.Length < size)
            {
                _encoded = new byte[size];
            }

            WriteChecked(item, _encoded.AsSpan(0, size));
            _encodedItem = item;
        }

        return _encoded.AsSpan(0, size);
    }

    private void WriteChecked(int item, Span<byte> destination)
    {
        var written = Write(item, destination);
        if (written != destination.Length)
        {
            throw new InvalidOperationException($"An item of {destination.Length} bytes was written as {written}.");
        }
    }
}
