using Microsoft.AspNetCore.Components.Web.Virtualization;
using Quintet.Protocol.Admin;

namespace Quintet.Console.Components.Explorer;

/// <summary>
/// The instances of a filter (a class, a manager), fetched a page at a time as <c>Virtualize</c> scrolls to them, each by
/// its offset (so a jump to the end of 100 000 instances asks for the last page alone): only the last few pages are
/// kept, never the whole list. Instances placed or removed meanwhile shift the pages after them, as in any listing by
/// position; the list is read again when the tree is.
/// </summary>
public sealed class InstancePages
{
    /// <summary>Instances asked for at once.</summary>
    public const int PageSize = 100;

    /// <summary>Pages kept in memory, the most recently used.</summary>
    public const int CachedPages = 4;

    /// <summary>The furthest offset the admin API pages from (<c>GetClusterTreeRequest.offset</c>); a longer listing shows its first part.</summary>
    public const int MaxOffset = 200_000;

    private readonly Func<GetClusterTreeRequest, CancellationToken, Task<GetClusterTreeResponse>> _fetch;
    private readonly GetClusterTreeRequest _filter;
    private readonly LinkedList<(int Page, IReadOnlyList<TreeInstance> Items)> _cache = new();

    /// <summary>Pages of the instances that <paramref name="filter"/> selects, fetched with <paramref name="fetch"/>.</summary>
    public InstancePages(GetClusterTreeRequest filter, Func<GetClusterTreeRequest, CancellationToken, Task<GetClusterTreeResponse>> fetch)
    {
        _filter = filter;
        _fetch = fetch;
    }

    /// <summary>The instances that match, as the last page fetched said; null before the first.</summary>
    public long? Total { get; private set; }

    /// <summary>Whether more instances match than the list can reach by offset: the page says to narrow it.</summary>
    public bool Capped => Total > MaxOffset + PageSize;

    /// <summary>Pages fetched so far (for tests: scrolling must not fetch everything).</summary>
    public int Fetches { get; private set; }

    /// <summary>Managers that did not say what they hold of the last page.</summary>
    public IReadOnlyList<string> Unanswered { get; private set; } = [];

    /// <summary>The items <c>Virtualize</c> asks for.</summary>
    public async ValueTask<ItemsProviderResult<TreeInstance>> ProvideAsync(ItemsProviderRequest request)
    {
        var items = new List<TreeInstance>(request.Count);
        var first = request.StartIndex / PageSize;
        var last = (request.StartIndex + Math.Max(request.Count, 1) - 1) / PageSize;
        for (var page = first; page <= last; page++)
        {
            var pageItems = await PageAsync(page, request.CancellationToken);
            if (pageItems is null)
            {
                break;
            }

            var skip = page == first ? request.StartIndex - (first * PageSize) : 0;
            items.AddRange(pageItems.Skip(skip).Take(request.Count - items.Count));
        }

        return new ItemsProviderResult<TreeInstance>(items, (int)Math.Min(Total ?? items.Count, MaxOffset + PageSize));
    }

    // Null past the last page.
    private async Task<IReadOnlyList<TreeInstance>?> PageAsync(int page, CancellationToken cancellationToken)
    {
        for (var node = _cache.First; node is not null; node = node.Next)
        {
            if (node.Value.Page == page)
            {
                _cache.Remove(node);
                _cache.AddFirst(node);
                return node.Value.Items;
            }
        }

        if ((Total is { } total && (long)page * PageSize >= total) || (long)page * PageSize > MaxOffset)
        {
            return null;
        }

        // Asked by its offset: a page far down costs one query, not the pages before it.
        var request = _filter.Clone();
        request.PageSize = PageSize;
        request.PageToken = string.Empty;
        request.Offset = page * PageSize;
        Fetches++;
        var response = await _fetch(request, cancellationToken);
        Total = response.MatchingInstances;
        Unanswered = [.. response.Unanswered];
        if (response.Instances.Count == 0)
        {
            return null;
        }

        IReadOnlyList<TreeInstance> items = [.. response.Instances];
        _cache.AddFirst((page, items));
        while (_cache.Count > CachedPages)
        {
            _cache.RemoveLast();
        }

        return items;
    }
}
