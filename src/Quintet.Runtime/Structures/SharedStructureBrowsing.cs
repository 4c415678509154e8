namespace Quintet.Runtime.Structures;

/// <summary>One shared structure this manager hosts a replica of, as an administrator sees it.</summary>
/// <param name="Kind"><c>dictionary</c>, <c>set</c>, <c>queue</c> or <c>counter</c>.</param>
/// <param name="Name">The name instances open it by.</param>
/// <param name="Durable">Whether it is logged on the managers' disks.</param>
/// <param name="Ready">False while this manager's replica is still joining (the figures are then zero).</param>
/// <param name="Entries">Dictionary entries, set members, queue items waiting; 1 for a counter.</param>
/// <param name="Bytes">Keys, members and values together, when the structure keeps the figure.</param>
/// <param name="Leased">Queue items taken and not yet acknowledged.</param>
/// <param name="Position">The position of the last change this replica applied.</param>
public sealed record SharedStructureSummary(string Kind, string Name, bool Durable, bool Ready, long Entries, long? Bytes, long Leased, long Position);

/// <summary>One entry of a page of a shared structure's contents.</summary>
/// <param name="Key">A dictionary's key, a set's member, a queue item's id, <c>value</c> for a counter.</param>
/// <param name="Value">A copy of the value (empty for a set's member; a counter's value as decimal text).</param>
/// <param name="Leased">For a queue item: taken and not yet acknowledged.</param>
public sealed record SharedStructureEntry(string Key, ReadOnlyMemory<byte> Value, bool Leased = false);

/// <summary>A page of a shared structure's contents, read at one position of its replica.</summary>
/// <param name="Position">The replica's position when the page was read.</param>
/// <param name="Total">Entries in the structure.</param>
/// <param name="Entries">The page, in the structure's order (keys ordinal; a queue's items by id).</param>
/// <param name="More">Whether entries follow the last one of the page.</param>
public sealed record SharedStructurePage(long Position, long Total, IReadOnlyList<SharedStructureEntry> Entries, bool More);

/// <summary>What the administration API reads of a structure: cheap figures, and pages copied under the replica's lock.</summary>
internal interface IBrowsableStructure
{
    (long Entries, long? Bytes, long Leased, long Position) Figures();

    /// <summary>The entries after <paramref name="after"/> (a key; a queue item's id), at most <paramref name="pageSize"/>.</summary>
    /// <exception cref="FormatException"><paramref name="after"/> cannot be a position in this kind of structure.</exception>
    SharedStructurePage Browse(string? after, int pageSize);
}

/// <summary>Pages over items kept in no order: the smallest keys after a key, in one pass and a heap of the page's size.</summary>
internal static class KeyPages
{
    private static readonly Comparer<string> Descending = Comparer<string>.Create((a, b) => string.CompareOrdinal(b, a));

    /// <summary>The items whose keys come after <paramref name="after"/>, the <paramref name="size"/> smallest, in order; and whether more follow.</summary>
    public static (List<T> Page, bool More) Take<T>(IEnumerable<T> items, Func<T, string> key, string? after, int size)
    {
        var heap = new PriorityQueue<T, string>(size + 1, Descending);
        var more = false;
        foreach (var item in items)
        {
            var k = key(item);
            if (after is not null && string.CompareOrdinal(k, after) <= 0)
            {
                continue;
            }

            if (heap.Count < size)
            {
                heap.Enqueue(item, k);
                continue;
            }

            more = true;
            heap.TryPeek(out _, out var largest);
            if (string.CompareOrdinal(k, largest) < 0)
            {
                heap.EnqueueDequeue(item, k);
            }
        }

        var page = new List<T>(heap.Count);
        while (heap.TryDequeue(out var item, out _))
        {
            page.Add(item);
        }

        page.Reverse();
        return (page, more);
    }
}
