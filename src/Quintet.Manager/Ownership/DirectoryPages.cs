namespace Quintet.Manager.Ownership;

/// <summary>Which placements a page of the directory shows.</summary>
/// <param name="ClassName">Only this class, when set.</param>
/// <param name="Owner">Only instances owned by the manager of this node name, when set.</param>
/// <param name="KeyPrefix">Only keys that start with this, when set.</param>
/// <param name="After">Only instances after this one in the order of (class, key), when set.</param>
/// <param name="Size">At most this many.</param>
/// <param name="Skip">Leave out this many of the first matching instances (after <paramref name="After"/>): a listing that jumps far.</param>
internal sealed record DirectoryPageQuery(string? ClassName, string? Owner, string? KeyPrefix, InstanceId? After, int Size, int Skip = 0);

/// <summary>One placed instance as a page shows it.</summary>
/// <param name="Id">The instance.</param>
/// <param name="Owner">The owner's node name; null if it never announced itself.</param>
/// <param name="OwnerInView">False once the owner left the directory's view.</param>
/// <param name="Epoch">Its ownership epoch.</param>
/// <param name="Backups">The node names of the managers registered as holding its backups.</param>
internal sealed record DirectoryPageEntry(InstanceId Id, string? Owner, bool OwnerInView, long Epoch, IReadOnlyList<string> Backups);

/// <summary>A page of the directory, with the counts the whole directory gives in the same pass.</summary>
/// <param name="Entries">The page, by class then key.</param>
/// <param name="More">Whether matching instances follow the page.</param>
/// <param name="Matching">Instances that match the query's filters, on every page.</param>
/// <param name="ByClass">Instances placed, by class (all of them, whatever the filters).</param>
/// <param name="ByOwner">Instances placed, by the owner's node name (all of them, whatever the filters).</param>
internal sealed record DirectoryPage(IReadOnlyList<DirectoryPageEntry> Entries, bool More, long Matching, IReadOnlyDictionary<string, long> ByClass, IReadOnlyDictionary<string, long> ByOwner);

/// <summary>
/// Reading the directory a page at a time for the administration API: one pass over the placements under the machine's
/// lock, keeping the page's smallest entries in a heap of its size (and of the entries it skips), so a page of a
/// 100 000-instance directory costs one pass and no sort of the whole. Nothing is kept between pages: the directory does
/// no work for paging until asked.
/// </summary>
internal static class DirectoryPages
{
    private static readonly Comparer<InstanceId> Descending = Comparer<InstanceId>.Create((a, b) => Compare(b, a));

    /// <summary>The order of a page: class, then key, ordinal.</summary>
    public static int Compare(InstanceId a, InstanceId b)
    {
        var byClass = string.CompareOrdinal(a.ClassName, b.ClassName);
        return byClass != 0 ? byClass : string.CompareOrdinal(a.Key, b.Key);
    }

    public static DirectoryPage Read(DirectoryState state, DirectoryPageQuery query)
    {
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(query);
        var names = state.Managers.ToDictionary(m => m.Key, m => m.Value.NodeName);
        var byClass = new Dictionary<string, long>(StringComparer.Ordinal);
        var byOwner = new Dictionary<string, long>(StringComparer.Ordinal);
        var keep = query.Size + query.Skip;
        var heap = new PriorityQueue<KeyValuePair<InstanceId, PlacedInstance>, InstanceId>(keep + 1, Descending);
        long matching = 0;
        var more = false;
        foreach (var placement in state.Placements)
        {
            var (id, placed) = placement;
            var owner = names.GetValueOrDefault(placed.Owner);
            byClass[id.ClassName] = byClass.GetValueOrDefault(id.ClassName) + 1;
            if (owner is not null)
            {
                byOwner[owner] = byOwner.GetValueOrDefault(owner) + 1;
            }

            if ((query.ClassName is { } className && id.ClassName != className)
                || (query.Owner is { } wanted && owner != wanted)
                || (query.KeyPrefix is { } prefix && !id.Key.StartsWith(prefix, StringComparison.Ordinal)))
            {
                continue;
            }

            matching++;
            if (query.After is { } after && Compare(id, after) <= 0)
            {
                continue;
            }

            if (heap.Count < keep)
            {
                heap.Enqueue(placement, id);
                continue;
            }

            more = true;
            heap.TryPeek(out _, out var largest);
            if (Compare(id, largest) < 0)
            {
                heap.EnqueueDequeue(placement, id);
            }
        }

        // The heap gives the largest first: the page is its first Size, the skipped entries are what is left after.
        var entries = new List<DirectoryPageEntry>(Math.Min(heap.Count, query.Size));
        while (entries.Count < query.Size && heap.Count > query.Skip && heap.TryDequeue(out var placement, out _))
        {
            var (id, placed) = placement;
            entries.Add(new DirectoryPageEntry(
                id,
                names.GetValueOrDefault(placed.Owner),
                state.ViewMembers.Contains(placed.Owner),
                placed.Epoch,
                [.. (placed.Backups ?? []).Select(b => names.GetValueOrDefault(b) ?? b.ToString()).Order(StringComparer.Ordinal)]));
        }

        entries.Reverse();
        return new DirectoryPage(entries, more, matching, byClass, byOwner);
    }
}
