using System.Text;
using Google.Protobuf;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The capture of a structure made of many keyed items (a dictionary's entries, a set's members), taken as arrays of
/// references and serialized only as it is read, off the machine's lock. Taking it costs one reference per item and a
/// count of the key bytes; serializing the state while the group's commands waited cost a copy of every byte, and, for
/// a state of hundreds of MB, a pause of seconds at every replica that captured it.
/// </summary>
/// <remarks>
/// The bytes are a protobuf message: the scalar fields first (<c>prefix</c>, serialized at capture), then each item as
/// one length-delimited field, in the ordinal order of the keys. Items are sorted at the first read, so that replicas
/// whose states are equal give equal bytes and an interrupted transfer can continue at another replica. An item is
/// either a string (a set's member) or a map entry of a string key and a bytes value (a dictionary's entry). The values'
/// arrays must not change while the capture lives: the state writes into new arrays until <see cref="Dispose"/>.
/// </remarks>
internal sealed class KeyedItemsSnapshot : IStateSnapshot
{
    private const byte KeyTag = (1 << 3) | (int)WireFormat.WireType.LengthDelimited;
    private const byte ValueTag = (2 << 3) | (int)WireFormat.WireType.LengthDelimited;

    private readonly Lock _gate = new();
    private readonly byte[] _prefix;
    private readonly byte _itemTag;
    private readonly string[] _keys;
    private readonly byte[][]? _values;
    private readonly Action? _released;
    private long[]? _starts;
    private byte[] _encoded = [];
    private int _encodedItem = -1;
    private bool _disposed;

    /// <param name="prefix">The message's other fields, serialized.</param>
    /// <param name="itemField">The field number of the repeated items.</param>
    /// <param name="keys">The keys; owned by the snapshot from now on (it sorts them).</param>
    /// <param name="values">The values, at the same indexes as their keys (a dictionary), or null (a set).</param>
    /// <param name="itemBytes">
    /// The items' encoded size, which the state keeps as it changes (<see cref="EntrySize"/>, <see cref="MemberSize"/>)
    /// so that the capture need not count every key's bytes under the lock; checked when the capture is first read.
    /// </param>
    /// <param name="released">Called once, at <see cref="Dispose"/>.</param>
    public KeyedItemsSnapshot(byte[] prefix, int itemField, string[] keys, byte[][]? values, long itemBytes, Action? released)
    {
        if (values is not null && values.Length != keys.Length)
        {
            throw new ArgumentException("Every key needs its value.", nameof(values));
        }

        _prefix = prefix;
        _itemTag = (byte)((itemField << 3) | (int)WireFormat.WireType.LengthDelimited);
        _keys = keys;
        _values = values;
        _released = released;
        Length = prefix.Length + itemBytes;
    }

    /// <summary>The encoded size of a dictionary's entry: its key and value as a map entry, in its field.</summary>
    public static int EntrySize(string key, int valueLength) => Field(EntryBody(Encoding.UTF8.GetByteCount(key), valueLength));

    /// <summary>The encoded size of a set's member, in its field.</summary>
    public static int MemberSize(string member) => Field(Encoding.UTF8.GetByteCount(member));

    /// <inheritdoc />
    public long Length { get; }

    /// <summary>The number of items captured.</summary>
    public int Count => _keys.Length;

    /// <inheritdoc />
    public int Read(long offset, Span<byte> destination)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(offset);
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var starts = _starts ??= Order();
            var copied = 0;
            if (offset < _prefix.Length)
            {
                copied = (int)Math.Min(_prefix.Length - offset, destination.Length);
                _prefix.AsSpan((int)offset, copied).CopyTo(destination);
            }

            var item = Array.BinarySearch(starts, offset + copied);
            item = item >= 0 ? item : ~item - 1;
            while (copied < destination.Length && item < _keys.Length)
            {
                var within = (int)(offset + copied - starts[item]);
                var size = (int)(starts[item + 1] - starts[item]);
                var room = destination.Length - copied;
                if (within == 0 && size <= room)
                {
                    // The common case for small items: written straight into the reader's buffer.
                    Write(item, destination.Slice(copied, size));
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

    private long[] Order()
    {
        if (_values is null)
        {
            Array.Sort(_keys, StringComparer.Ordinal);
        }
        else
        {
            Array.Sort(_keys, _values, StringComparer.Ordinal);
        }

        var starts = new long[_keys.Length + 1];
        starts[0] = _prefix.Length;
        for (var i = 0; i < _keys.Length; i++)
        {
            starts[i + 1] = starts[i] + ItemSize(i);
        }

        // The state's running count and the items disagree only through a bug; serving a wrong length would corrupt
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

            Write(item, _encoded.AsSpan(0, size));
            _encodedItem = item;
        }

        return _encoded.AsSpan(0, size);
    }

    private static int Field(int body) => 1 + CodedOutputStream.ComputeLengthSize(body) + body;

    private static int EntryBody(int key, int value) =>
        1 + CodedOutputStream.ComputeLengthSize(key) + key + 1 + CodedOutputStream.ComputeLengthSize(value) + value;

    private int ItemSize(int item) => Field(BodySize(item));

    private int BodySize(int item)
    {
        var key = Encoding.UTF8.GetByteCount(_keys[item]);
        return _values is null ? key : EntryBody(key, _values[item].Length);
    }

    private void Write(int item, Span<byte> destination)
    {
        var at = 0;
        destination[at++] = _itemTag;
        at += WriteVarint(destination[at..], (uint)BodySize(item));
        if (_values is null)
        {
            at += Encoding.UTF8.GetBytes(_keys[item], destination[at..]);
        }
        else
        {
            destination[at++] = KeyTag;
            at += WriteVarint(destination[at..], (uint)Encoding.UTF8.GetByteCount(_keys[item]));
            at += Encoding.UTF8.GetBytes(_keys[item], destination[at..]);
            var value = _values[item];
            destination[at++] = ValueTag;
            at += WriteVarint(destination[at..], (uint)value.Length);
            value.CopyTo(destination[at..]);
            at += value.Length;
        }

        if (at != destination.Length)
        {
            throw new InvalidOperationException($"An item of {destination.Length} bytes was written as {at}.");
        }
    }

    private static int WriteVarint(Span<byte> destination, uint value)
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
}
