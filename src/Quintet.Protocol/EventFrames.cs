using System.Buffers;

namespace Quintet.Protocol;

/// <summary>
/// The position of an event in the messages of a server-streaming operation. Each message is the event as the
/// component published it, preceded by one protobuf field, number <see cref="PositionField"/> (a varint): protobuf
/// allows fields in any order and parsers skip unknown ones, so a client that does not know the field reads the event
/// as it is, and the managers and the local proxy pass the bytes on undecoded. <c>quintet proto export</c> declares it
/// in the event's message as <c>uint64 quintet_position = 536870911;</c>.
/// </summary>
public static class EventFrames
{
    /// <summary>The field number of an event's position: the highest protobuf allows, so that no contract's own field meets it.</summary>
    public const int PositionField = 536_870_911;

    /// <summary>The field's name in an exported <c>.proto</c>.</summary>
    public const string PositionFieldName = "quintet_position";

    // The tag of the field as a varint: (536870911 << 3) | wire type 0.
    private const ulong Tag = ((ulong)PositionField << 3) | 0;

    /// <summary>The event's bytes with its position before them: what a subscriber receives.</summary>
    public static byte[] Frame(long position, ReadOnlySpan<byte> payload)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(position);
        Span<byte> prefix = stackalloc byte[20];
        var length = WriteVarint(prefix, Tag);
        length += WriteVarint(prefix[length..], (ulong)position);
        var framed = new byte[length + payload.Length];
        prefix[..length].CopyTo(framed);
        payload.CopyTo(framed.AsSpan(length));
        return framed;
    }

    /// <summary>
    /// The position of a framed event: the value of its first field when that is <see cref="PositionField"/>; 0 when
    /// the message does not begin with it.
    /// </summary>
    public static long ReadPosition(ReadOnlySequence<byte> message)
    {
        Span<byte> head = stackalloc byte[20];
        var available = (int)Math.Min(message.Length, head.Length);
        message.Slice(0, available).CopyTo(head);
        head = head[..available];
        if (!TryReadVarint(head, out var tag, out var used) || tag != Tag)
        {
            return 0;
        }

        return TryReadVarint(head[used..], out var position, out _) && position <= long.MaxValue ? (long)position : 0;
    }

    private static int WriteVarint(Span<byte> destination, ulong value)
    {
        var i = 0;
        while (value >= 0x80)
        {
            destination[i++] = (byte)(value | 0x80);
            value >>= 7;
        }

        destination[i++] = (byte)value;
        return i;
    }

    private static bool TryReadVarint(ReadOnlySpan<byte> source, out ulong value, out int used)
    {
        value = 0;
        for (used = 0; used < source.Length && used < 10; used++)
        {
            value |= (ulong)(source[used] & 0x7F) << (7 * used);
            if ((source[used] & 0x80) == 0)
            {
                used++;
                return true;
            }
        }

        return false;
    }
}
