using System.CommandLine;
using System.Globalization;
using Google.Protobuf.WellKnownTypes;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet audit</c>: the audit log, newest first.</summary>
internal static class AuditCommand
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(30);
        public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var limit = new Option<int>("--limit", "-n") { Description = "At most this many entries (1 to 10000).", DefaultValueFactory = _ => 100 };
        var since = new Option<DateTimeOffset?>("--since") { Description = "Only entries at or after this time, for example 2026-11-26T08:00Z." };
        var caller = new Option<string?>("--caller") { Description = "Only entries of this caller." };
        var command = new Command("audit", "Print the audit log: every administrative action and every refused call, newest first, from every manager.")
        {
            endpoint, output, limit, since, caller,
        };
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var request = new ListAuditEntriesRequest { Limit = parse.GetValue(limit), Caller = parse.GetValue(caller) ?? "" };
            if (parse.GetValue(since) is { } from)
            {
                request.Since = Timestamp.FromDateTimeOffset(from);
            }

            var response = await new Audit.AuditClient(channel).ListAuditEntriesAsync(request, deadline: deadline, cancellationToken: token);
            if (parse.GetValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var table = new Table().AddColumns("time (UTC)", "manager", "caller", "from", "action", "target", "result");
            foreach (var entry in response.Entries)
            {
                var result = entry.Message.Length > 0 ? $"{entry.Result}: {entry.Message}" : entry.Result;
                var target = entry.PackageSha256.Length > 0 ? $"{entry.Target} sha256 {entry.PackageSha256}" : entry.Target;
                table.AddRow(
                    entry.Time.ToDateTime().ToString("yyyy-MM-dd HH:mm:ss.fff", CultureInfo.InvariantCulture),
                    Markup.Escape(entry.Manager),
                    Markup.Escape(entry.Caller + (entry.Authenticated ? "" : " (unauthenticated)")),
                    Markup.Escape(entry.Peer),
                    Markup.Escape(entry.Action),
                    Markup.Escape(target),
                    Markup.Escape(result));
            }

            context.Console.Write(table);
            foreach (var unreadable in response.Unreadable)
            {
                context.Console.MarkupLine($"[yellow]Not read:[/] {Markup.Escape(unreadable)}");
            }

            return ExitCodes.Ok;
        }));
        return command;
    }
}
