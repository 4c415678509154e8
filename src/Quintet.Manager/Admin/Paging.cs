using System.Globalization;
using System.Text;
using Grpc.Core;

namespace Quintet.Manager.Admin;

/// <summary>
/// The paging every paged admin method shares: a page size checked against its bounds, and an opaque token that names
/// the last item returned (so the next page starts after it, whatever changed meanwhile).
/// </summary>
internal static class Paging
{
    /// <summary>The page size a request asks for when it gives none.</summary>
    public const int DefaultPageSize = 100;

    /// <summary>The largest page size a request may ask for.</summary>
    public const int MaxPageSize = 1000;

    private const string Version = "q1";

    /// <summary><paramref name="requested"/>, or <paramref name="byDefault"/> for 0.</summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT for a size out of range, naming the field and the range.</exception>
    public static int Size(int requested, string field = "page_size", int byDefault = DefaultPageSize) => requested switch
    {
        0 => byDefault,
        >= 1 and <= MaxPageSize => requested,
        _ => throw new RpcException(new Status(StatusCode.InvalidArgument, $"{field} must be between 1 and {MaxPageSize} (0 for {byDefault}), not {requested}.")),
    };

    /// <summary>A token naming the item whose parts (a class and a key, say) are <paramref name="parts"/>.</summary>
    public static string Token(params string[] parts)
    {
        var text = new StringBuilder(Version);
        foreach (var part in parts)
        {
            text.Append(part.Length.ToString(CultureInfo.InvariantCulture)).Append(':').Append(part);
        }

        return Convert.ToBase64String(Encoding.UTF8.GetBytes(text.ToString())).TrimEnd('=').Replace('+', '-').Replace('/', '_');
    }

    /// <summary>The <paramref name="count"/> parts of <paramref name="token"/>; null for an empty token (the first page).</summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT for a token this API did not make.</exception>
    public static string[]? Read(string token, int count)
    {
        if (string.IsNullOrEmpty(token))
        {
            return null;
        }

        return TryRead(token, count) ?? throw new RpcException(new Status(StatusCode.InvalidArgument, $"page_token '{(token.Length > 40 ? token[..40] + "..." : token)}' is not one this method returned; ask again without it to start from the first page."));
    }

    private static string[]? TryRead(string token, int count)
    {
        string text;
        try
        {
            var base64 = token.Replace('-', '+').Replace('_', '/');
            base64 += new string('=', (4 - (base64.Length % 4)) % 4);
            text = new UTF8Encoding(false, true).GetString(Convert.FromBase64String(base64));
        }
        catch (Exception e) when (e is FormatException or ArgumentException)
        {
            return null;
        }

        if (!text.StartsWith(Version, StringComparison.Ordinal))
        {
            return null;
        }

        var parts = new string[count];
        var at = Version.Length;
        for (var i = 0; i < count; i++)
        {
            var colon = text.IndexOf(':', at);
            if (colon < 0 || !int.TryParse(text.AsSpan(at, colon - at), NumberStyles.None, CultureInfo.InvariantCulture, out var length) || colon + 1 + length > text.Length)
            {
                return null;
            }

            parts[i] = text.Substring(colon + 1, length);
            at = colon + 1 + length;
        }

        return at == text.Length ? parts : null;
    }
}
