using Google.Protobuf;
using Quintet.Runtime.Wire;

namespace Quintet.Runtime.Structures;

/// <summary>
/// The capture of a queue's items (see <see cref="ItemsSnapshot"/>): the waiting items in their order, then the leased
/// ones in the order of their tokens (sorted at the first read: the leases' own order depends on history, which a
/// replica restored from a snapshot does not share). Laid out as <see cref="QueueSnapshot"/>'s repeated fields.
/// </summary>
internal sealed class QueueItemsSnapshot(byte[] prefix, SharedQueueState.Item[] waiting, SharedQueueState.Lease[] leased)
    : ItemsSnapshot(prefix, waiting.Length + leased.Length, Sizes(waiting, leased), released: null)
{
    private static readonly byte WaitingTag = Tag(QueueSnapshot.WaitingFieldNumber, WireFormat.WireType.LengthDelimited);
    private static readonly byte LeasedTag = Tag(QueueSnapshot.LeasedFieldNumber, WireFormat.WireType.LengthDelimited);
    private static readonly byte IdTag = Tag(QueueEntry.IdFieldNumber, WireFormat.WireType.Varint);
    private static readonly byte ValueTag = Tag(QueueEntry.ValueFieldNumber, WireFormat.WireType.LengthDelimited);
    private static readonly byte TokenTag = Tag(QueueLeaseEntry.TokenFieldNumber, WireFormat.WireType.Varint);
    private static readonly byte ItemTag = Tag(QueueLeaseEntry.ItemFieldNumber, WireFormat.WireType.LengthDelimited);
    private static readonly byte DeadlineTag = Tag(QueueLeaseEntry.DeadlineUnixMsFieldNumber, WireFormat.WireType.Varint);

    protected override void Order() => Array.Sort(leased, (a, b) => a.Token.CompareTo(b.Token));

    protected override int SizeOf(int item) =>
        item < waiting.Length ? Field(EntryBody(waiting[item])) : Field(LeaseBody(leased[item - waiting.Length]));

    protected override int Write(int item, Span<byte> destination)
    {
        if (item < waiting.Length)
        {
            var entry = waiting[item];
            destination[0] = WaitingTag;
            var at = 1 + WriteVarint(destination[1..], (ulong)EntryBody(entry));
            return at + WriteEntry(entry, destination[at..]);
        }

        var lease = leased[item - waiting.Length];
        destination[0] = LeasedTag;
        var written = 1 + WriteVarint(destination[1..], (ulong)LeaseBody(lease));
        written += WriteScalar(TokenTag, lease.Token, destination[written..]);
        destination[written++] = ItemTag;
        written += WriteVarint(destination[written..], (ulong)EntryBody(lease.Item));
        written += WriteEntry(lease.Item, destination[written..]);
        return written + WriteScalar(DeadlineTag, lease.Deadline, destination[written..]);
    }

    private static long Sizes(SharedQueueState.Item[] waiting, SharedQueueState.Lease[] leased)
    {
        var bytes = 0L;
        foreach (var item in waiting)
        {
            bytes += Field(EntryBody(item));
        }

        foreach (var lease in leased)
        {
            bytes += Field(LeaseBody(lease));
        }

        return bytes;
    }

    private static byte Tag(int field, WireFormat.WireType type) => (byte)((field << 3) | (int)type);

    private static int Field(int body) => 1 + CodedOutputStream.ComputeLengthSize(body) + body;

    // Fields at their default value are left out, as protobuf writes them.
    private static int Scalar(long value) => value == 0 ? 0 : 1 + CodedOutputStream.ComputeInt64Size(value);

    private static int EntryBody(SharedQueueState.Item item) =>
        Scalar(item.Id) + (item.Value.Length == 0 ? 0 : Field(item.Value.Length));

    private static int LeaseBody(SharedQueueState.Lease lease) =>
        Scalar(lease.Token) + Field(EntryBody(lease.Item)) + Scalar(lease.Deadline);

    private static int WriteScalar(byte tag, long value, Span<byte> destination)
    {
        if (value == 0)
        {
            return 0;
        }

        destination[0] = tag;
        return 1 + WriteVarint(destination[1..], (ulong)value);
    }

    private static int WriteEntry(SharedQueueState.Item item, Span<byte> destination)
    {
        var at = WriteScalar(IdTag, item.Id, destination);
        if (item.Value.Length > 0)
        {
            destination[at++] = ValueTag;
            at += WriteVarint(destination[at..], (ulong)item.Value.Length);
            item.Value.CopyTo(destination[at..]);
            at += item.Value.Length;
        }

        return at;
    }
}
