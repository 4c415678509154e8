using System.CommandLine;

namespace Quintet.Cli.Commands;

/// <summary>The options of a paged listing: the page size, where to start, and whether to follow every page.</summary>
internal sealed record PageOptions(Option<int> Size, Option<string?> Token, Option<bool> All)
{
    /// <summary>Pages followed at most with <c>--all</c>: a runaway listing stops rather than fill the terminal for ever.</summary>
    public const int MaxPages = 10_000;

    public static PageOptions Create(string items) => new(
        new Option<int>("--page-size") { Description = $"{items} per page, 1 to 1000 (default 100).", DefaultValueFactory = _ => 0 },
        new Option<string?>("--page-token") { Description = "Start at this page: the token the previous page printed." },
        new Option<bool>("--all") { Description = "Follow every page to the last." });

    public void AddTo(Command command)
    {
        command.Options.Add(Size);
        command.Options.Add(Token);
        command.Options.Add(All);
    }

    /// <summary>
    /// Asks for the first page (or <c>--page-token</c>'s), then, with <c>--all</c>, each next one, handing each answer to
    /// <paramref name="merge"/>; returns the first answer (into which the others were merged) and the last next-page token.
    /// </summary>
    public async Task<(T First, string Next)> ReadAsync<T>(ParseResult parse, Func<int, string, Task<T>> ask, Func<T, string> next, Action<T, T> merge)
    {
        var first = await ask(parse.GetValue(Size), parse.GetValue(Token) ?? string.Empty);
        var token = next(first);
        for (var pages = 1; parse.GetValue(All) && token.Length > 0 && pages < MaxPages; pages++)
        {
            var page = await ask(parse.GetValue(Size), token);
            merge(first, page);
            token = next(page);
        }

        return (first, token);
    }
}
