namespace Quintet.Manager.Calls;

/// <summary>Reads request headers on the call path without boxing their <c>StringValues</c> (as LINQ's <c>FirstOrDefault</c> would).</summary>
internal static class HeaderValues
{
    /// <summary>The first value of header <paramref name="name"/>; null when the request has none.</summary>
    public static string? First(this IHeaderDictionary headers, string name) =>
        headers.TryGetValue(name, out var values) && values.Count > 0 ? values[0] : null;
}
