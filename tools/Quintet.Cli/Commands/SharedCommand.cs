using System.CommandLine;
using System.Globalization;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet shared list|browse</c>: the shared structures a manager hosts, read-only.</summary>
internal static class SharedCommand
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    public static Command Create(CliContext context)
    {
        var listEndpoint = AdminCall.EndpointOption();
        var listOutput = OutputFormats.CreateOption();
        var listManager = ManagerOption();
        var list = new Command("list", "List the shared dictionaries, sets, queues and counters a manager hosts: entries, bytes, position.") { listManager, listEndpoint, listOutput };
        list.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(listEndpoint), Deadline, async (channel, deadline) =>
        {
            var response = await new SharedStructureAdmin.SharedStructureAdminClient(channel).ListSharedStructuresAsync(
                new ListSharedStructuresRequest { Manager = parse.GetValue(listManager) ?? "" }, deadline: deadline, cancellationToken: token);
            if (parse.GetRequiredValue(listOutput) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var table = new Table().Title($"shared structures on {Markup.Escape(response.Manager)}").AddColumns("kind", "name", "entries", "bytes", "leased", "position", "durable");
            foreach (var s in response.Structures)
            {
                table.AddRow(
                    Markup.Escape(s.Kind),
                    Markup.Escape(s.Name) + (s.Ready ? "" : " [grey](joining)[/]"),
                    s.Entries.ToString(CultureInfo.InvariantCulture),
                    s.BytesKnown ? s.Bytes.ToString(CultureInfo.InvariantCulture) : "-",
                    s.Leased.ToString(CultureInfo.InvariantCulture),
                    s.Position.ToString(CultureInfo.InvariantCulture),
                    s.Durable ? "yes" : "no");
            }

            context.Console.Write(table);
            return ExitCodes.Ok;
        }));

        var browseEndpoint = AdminCall.EndpointOption();
        var browseOutput = OutputFormats.CreateOption();
        var browseManager = ManagerOption();
        var kind = new Argument<string>("kind") { Description = "dictionary, set, queue or counter." };
        kind.AcceptOnlyFromAmong("dictionary", "set", "queue", "counter");
        var name = new Argument<string>("name") { Description = "The structure's name, as 'quintet shared list' shows it." };
        var paging = PageOptions.Create("Entries");
        var browse = new Command("browse", "Print a page of a shared structure's contents as a manager's replica holds them: keys, and values as text when printable, else base64.")
        {
            kind, name, browseManager, browseEndpoint, browseOutput,
        };
        paging.AddTo(browse);
        browse.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(browseEndpoint), Deadline, async (channel, deadline) =>
        {
            var client = new SharedStructureAdmin.SharedStructureAdminClient(channel);
            var (page, next) = await paging.ReadAsync(
                parse,
                (size, pageToken) => client.BrowseSharedStructureAsync(
                    new BrowseSharedStructureRequest { Manager = parse.GetValue(browseManager) ?? "", Kind = parse.GetRequiredValue(kind), Name = parse.GetRequiredValue(name), PageSize = size, PageToken = pageToken },
                    deadline: deadline,
                    cancellationToken: token).ResponseAsync,
                p => p.NextPageToken,
                (first, more) => first.Entries.AddRange(more.Entries));
            page.NextPageToken = next;
            if (parse.GetRequiredValue(browseOutput) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, page);
                return ExitCodes.Ok;
            }

            var table = new Table().Title($"{Markup.Escape(page.Kind)} {Markup.Escape(page.Name)} on {Markup.Escape(page.Manager)} at position {page.Position}").AddColumns("key", "value");
            foreach (var entry in page.Entries)
            {
                var value = entry.ValueIsText ? Markup.Escape(entry.ValueText) : $"[grey]base64[/] {entry.Value.ToBase64()}";
                table.AddRow(Markup.Escape(entry.Key) + (entry.Leased ? " [yellow](leased)[/]" : ""), value);
            }

            context.Console.Write(table);
            context.Console.MarkupLine($"{page.Entries.Count} of {page.Total} entr{(page.Total == 1 ? "y" : "ies")}.");
            ClusterViewsCommands.NextPage(context, page.NextPageToken);
            return ExitCodes.Ok;
        }));

        return new Command("shared", "Look at the shared structures the managers host (read-only).") { list, browse };
    }

    internal static Option<string?> ManagerOption() => new("--manager", "-m") { Description = "The manager to ask (its node name); default: the one at the endpoint." };
}
