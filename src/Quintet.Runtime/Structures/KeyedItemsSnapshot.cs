using System.Text;
using Google.Protobuf;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The capture of a dictionary's entries or a set's members (see <see cref="ItemsSnapshot"/>), written in the ordinal
/// order of their keys, so that replicas whose states are equal give equal bytes whatever order the entries came in,
/// and a transfer interrupted at one replica continues at another. An item is either a string (a member) or a map
/// entry of a string key and a bytes value. The values' arrays must not change while the capture lives: the dictionary
/// writes into new arrays until it is disposed.
/// </summary>
internal sealed class KeyedItemsSnapshot : ItemsSnapshot
{
    private const byte KeyTag = (1 << 3) | (int)WireFormat.WireType.LengthDelimited;
    private const byte ValueTag = (2 << 3) | (int)WireFormat.WireType.LengthDelimited;

    private readonly byte _itemTag;
    private readonly string[] _keys;
    private readonly byte[][]? _values;

    /// <param name="prefix">The message's other fields, serialized.</param>
    /// <param name="itemField">The field number of the repeated items.</param>
    /// <param name="keys">The keys; owned by the snapshot from now on (it sorts them).</param>
    /// <param name="values">The values, at the same indexes as their keys (a dictionary), or null (a set).</param>
    /// <param name="itemBytes">
    /// The items' encoded size, which the state keeps as it changes (<see cref="EntrySize"/>, <see cref="MemberSize"/>)
    /// so that the capture need not count every key's bytes under the lock.
    /// </param>
    /// <param name="released">Called once, at <see cref="ItemsSnapshot.Dispose"/>.</param>
    public KeyedItemsSnapshot(byte[] prefix, int itemField, string[] keys, byte[][]? values, long itemBytes, Action? released)
        : base(prefix, keys.Length, itemBytes, released)
    {
        if (values is not null && values.Length != keys.Length)
        {
            throw new ArgumentException("Every key needs its value.", nameof(values));
        }

        _itemTag = (byte)((itemField << 3) | (int)WireFormat.WireType.LengthDelimited);
        _keys = keys;
        _values = values;
    }

    /// <summary>The encoded size of a dictionary's entry: its key and value as a map entry, in its field.</summary>
    public static int EntrySize(string key, int valueLength) => Field(EntryBody(Encoding.UTF8.GetByteCount(key), valueLength));

    /// <summary>The encoded size of a set's member, in its field.</summary>
    public static int MemberSize(string member) => Field(Encoding.UTF8.GetByteCount(member));

    protected override void Order()
    {
        if (_values is null)
        {
            Array.Sort(_keys, StringComparer.Ordinal);
        }
        else
        {
            Array.Sort(_keys, _values, StringComparer.Ordinal);
        }
    }

    protected override int SizeOf(int item) => Field(BodySize(item, Encoding.UTF8.GetByteCount(_keys[item])));

    protected override int Write(int item, Span<byte> destination)
    {
        var key = Encoding.UTF8.GetByteCount(_keys[item]);
        var at = 0;
        destination[at++] = _itemTag;
        at += WriteVarint(destination[at..], (uint)BodySize(item, key));
        if (_values is null)
        {
            return at + Encoding.UTF8.GetBytes(_keys[item], destination[at..]);
        }

        destination[at++] = KeyTag;
        at += WriteVarint(destination[at..], (uint)key);
        at += Encoding.UTF8.GetBytes(_keys[item], destination[at..]);
        var value = _values[item];
        destination[at++] = ValueTag;
        at += WriteVarint(destination[at..], (uint)value.Length);
        value.CopyTo(destination[at..]);
        return at + value.Length;
    }

    private static int Field(int body) => 1 + CodedOutputStream.ComputeLengthSize(body) + body;

    private static int EntryBody(int key, int value) =>
        1 + CodedOutputStream.ComputeLengthSize(key) + key + 1 + CodedOutputStream.ComputeLengthSize(value) + value;

    private int BodySize(int item, int keyBytes) => _values is null ? keyBytes : EntryBody(keyBytes, _values[item].Length);
}
