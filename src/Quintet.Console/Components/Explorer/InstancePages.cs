using Microsoft.AspNetCore.Components.Web.Virtualization;
using Quintet.Protocol.Admin;

namespace Quintet.Console.Components.Explorer;

/// <summary>
/// The instances of a filter (a class, a manager), fetched a page at a time as <c>Virtualize</c> scrolls to them: only
/// the page tokens seen and the last few pages are kept, never the whole list. The admin API's pages go forward only,
/// so reaching page N the first time asks for the pages before it that were not seen yet.
/// </summary>
public sealed class InstancePages
{
    /// <summary>Instances asked for at once.</summary>
    public const int PageSize = 100;

    /// <summary>Pages kept in memory, the most recently used.</summary>
    public const int CachedPages = 4;

    private readonly Func<GetClusterTreeRequest, CancellationToken, Task<GetClusterTreeResponse>> _fetch;
    private readonly GetClusterTreeRequest _filter;
    private readonly List<string> _tokens = [string.Empty];
    private readonly LinkedList<(int Page, IReadOnlyList<TreeInstance> Items)> _cache = new();

    /// <summary>Pages of the instances that <paramref name="filter"/> selects, fetched with <paramref name="fetch"/>.</summary>
    public InstancePages(GetClusterTreeRequest filter, Func<GetClusterTreeRequest, CancellationToken, Task<GetClusterTreeResponse>> fetch)
    {
        _filter = filter;
        _fetch = fetch;
    }

    /// <summary>The instances that match, as the last page fetched said; null before the first.</summary>
    public long? Total { get; private set; }

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

        return new ItemsProviderResult<TreeInstance>(items, (int)Math.Min(Total ?? items.Count, int.MaxValue));
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

        // Pages go forward only: learn the tokens of the pages before this one first.
        for (var known = _tokens.Count - 1; known < page; known++)
        {
            if (await FetchAsync(known, cancellationToken) is null)
            {
                return null;
            }
        }

        return await FetchAsync(page, cancellationToken);
    }

    private async Task<IReadOnlyList<TreeInstance>?> FetchAsync(int page, CancellationToken cancellationToken)
    {
        if (page >= _tokens.Count)
        {
            return null;
        }

        var request = _filter.Clone();
        request.PageSize = PageSize;
        request.PageToken = _tokens[page];
        Fetches++;
        var response = await _fetch(request, cancellationToken);
        Total = response.MatchingInstances;
        Unanswered = [.. response.Unanswered];
        if (page + 1 == _tokens.Count && response.NextPageToken.Length > 0)
        {
            _tokens.Add(response.NextPageToken);
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
