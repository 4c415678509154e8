using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// The total order of one view: which message (sender rank, total index) holds each global position, as the
/// sequencer's order records said, and which position is delivered next.
/// </summary>
internal sealed class TotalOrder
{
    private readonly Dictionary<long, Slot> _byPosition = [];
    private readonly Dictionary<(int Rank, long Index), long> _byMessage = [];

    // Every position below this one is forgotten.
    private long _oldestHeld = 1;

    /// <summary>The next global position to deliver, from 1.</summary>
    public long NextToDeliver { get; set; } = 1;

    /// <summary>One more than the highest position assigned so far.</summary>
    public long NextToAssign { get; private set; } = 1;

    /// <summary>Positions held: assigned and not forgotten.</summary>
    public int Count => _byPosition.Count;

    /// <summary>Applies an order record found at <paramref name="recordSeq"/> in the sequencer's stream.</summary>
    public void Apply(OrderBody record, long recordSeq)
    {
        var position = record.FirstGlobal;
        foreach (var run in record.Runs)
        {
            for (var i = 0; i < run.Count; i++)
            {
                Assign(position++, run.SenderRank, run.FirstIndex + i, recordSeq);
            }
        }
    }

    public void Assign(long position, int rank, long index, long recordSeq)
    {
        _byPosition[position] = new Slot(rank, index, recordSeq);
        _byMessage[(rank, index)] = position;
        NextToAssign = Math.Max(NextToAssign, position + 1);
    }

    public bool TryGetPosition(int rank, long index, out long position) => _byMessage.TryGetValue((rank, index), out position);

    public bool TryGetSlot(long position, out Slot slot) => _byPosition.TryGetValue(position, out slot);

    /// <summary>Forgets every assignment at or after <paramref name="position"/> (the flush's tail replaces them).</summary>
    public void TruncateFrom(long position)
    {
        for (var p = Math.Max(position, _oldestHeld); p < NextToAssign; p++)
        {
            Forget(p);
        }

        NextToAssign = position;
    }

    /// <summary>
    /// Forgets the positions below <see cref="NextToDeliver"/>: nothing reads them again, and a view can live for days
    /// under load, so keeping them would grow without bound.
    /// </summary>
    public void ForgetDelivered()
    {
        for (; _oldestHeld < NextToDeliver; _oldestHeld++)
        {
            Forget(_oldestHeld);
        }
    }

    private void Forget(long position)
    {
        if (_byPosition.Remove(position, out var slot))
        {
            _byMessage.Remove((slot.Rank, slot.Index));
        }
    }

    /// <param name="Rank">The sender's rank in the view.</param>
    /// <param name="Index">The sender's total-order index of the message.</param>
    /// <param name="RecordSeq">Where the record that assigned it stands in the sequencer's stream.</param>
    public readonly record struct Slot(int Rank, long Index, long RecordSeq);
}
