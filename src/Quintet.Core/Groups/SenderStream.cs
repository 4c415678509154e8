using Quintet.Core.Groups.Wire;

namespace Quintet.Core.Groups;

/// <summary>
/// What one member holds of one sender's stream in the current view: entries by seq, how far they are contiguous,
/// how far they were processed (delivered, or consumed for an order record) and what was freed as stable.
/// </summary>
internal sealed class SenderStream
{
    private readonly Dictionary<long, StreamEntry> _entries = [];

    /// <summary>The highest seq such that every entry 1..seq has been received.</summary>
    public long Contiguous { get; private set; }

    /// <summary>The highest seq the delivery cursor has passed.</summary>
    public long Processed { get; set; }

    /// <summary>Entries up to here were stable and have been freed.</summary>
    public long Freed { get; private set; }

    /// <summary>The highest seq received, contiguous or not.</summary>
    public long HighestReceived { get; private set; }

    /// <summary>The payload bytes held.</summary>
    public long HeldBytes { get; private set; }

    /// <summary>True when some entry beyond <see cref="Contiguous"/> arrived: an earlier one is missing.</summary>
    public bool HasGap => HighestReceived > Contiguous;

    /// <summary>Adds an entry; false when it was already held or freed.</summary>
    public bool Add(StreamEntry entry)
    {
        if (entry.Seq <= Freed || !_entries.TryAdd(entry.Seq, entry))
        {
            return false;
        }

        HeldBytes += entry.Data?.Payload.Length ?? 0;
        HighestReceived = Math.Max(HighestReceived, entry.Seq);
        while (_entries.ContainsKey(Contiguous + 1))
        {
            Contiguous++;
        }

        return true;
    }

    public StreamEntry? Get(long seq) => _entries.GetValueOrDefault(seq);

    /// <summary>The held entries in <paramref name="from"/>..<paramref name="to"/>, in order.</summary>
    public IEnumerable<StreamEntry> Range(long from, long to)
    {
        for (var seq = Math.Max(from, Freed + 1); seq <= to; seq++)
        {
            if (_entries.TryGetValue(seq, out var entry))
            {
                yield return entry;
            }
        }
    }

    /// <summary>Frees entries up to <paramref name="seq"/> (never past what this member processed).</summary>
    public void Free(long seq)
    {
        var upTo = Math.Min(seq, Processed);
        for (var s = Freed + 1; s <= upTo; s++)
        {
            if (_entries.Remove(s, out var entry))
            {
                HeldBytes -= entry.Data?.Payload.Length ?? 0;
            }
        }

        Freed = Math.Max(Freed, upTo);
    }
}
