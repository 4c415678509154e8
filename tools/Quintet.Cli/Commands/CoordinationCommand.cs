using System.CommandLine;
using System.Globalization;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet coordination list</c>: elections, locks, votes, barriers and transactions in flight on a manager.</summary>
internal static class CoordinationCommand
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var manager = SharedCommand.ManagerOption();
        var kind = new Option<string?>("--kind") { Description = "Only this kind: vote, election, lock, barrier or transactions." };
        kind.AcceptOnlyFromAmong("vote", "election", "lock", "barrier", "transactions");
        var list = new Command("list", "List the coordination tools a manager hosts, with leaders and terms, lock holders and waiters, open votes and transactions, barriers' arrivals.")
        {
            manager, kind, endpoint, output,
        };
        list.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var response = await new CoordinationAdmin.CoordinationAdminClient(channel).ListCoordinationAsync(
                new ListCoordinationRequest { Manager = parse.GetValue(manager) ?? "", Kind = parse.GetValue(kind) ?? "" }, deadline: deadline, cancellationToken: token);
            if (parse.GetRequiredValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var table = new Table().Title($"coordination on {Markup.Escape(response.Manager)}").AddColumns("kind", "name", "participants", "in flight", "replicas");
            foreach (var tool in response.Tools)
            {
                var inFlight = new List<string>();
                if (tool.Kind == "election")
                {
                    inFlight.Add(tool.Leader.Length > 0 ? $"leader {tool.Leader}, term {tool.Term}" : $"no leader, term {tool.Term}");
                }

                inFlight.AddRange(tool.Holders.Select(h => $"held by {h.Key} ({h.Mode}, token {h.Token})"));
                inFlight.AddRange(tool.Waiting.Select(w => $"{w.Key} waits ({w.Mode})"));
                inFlight.AddRange(tool.Open.Select(p => $"{(p.Kind == "2pc" ? "transaction" : "vote")} {p.Id} by {p.Proposer}, {p.Rule}: {string.Join(" ", p.Ballots)}"));
                if (tool.Kind == "barrier")
                {
                    inFlight.Add($"phase {tool.Generation}, arrived: {(tool.Arrived.Count == 0 ? "none" : string.Join(", ", tool.Arrived))}");
                }

                if (tool.Kind is "vote" or "transactions")
                {
                    inFlight.Add($"{tool.Decided} decided");
                }

                table.AddRow(
                    Markup.Escape(tool.Kind),
                    Markup.Escape(tool.Name) + (tool.Stopping ? " [grey](leaving)[/]" : ""),
                    Markup.Escape(tool.Participants.Count == 0 ? "-" : string.Join(", ", tool.Participants)),
                    Markup.Escape(inFlight.Count == 0 ? "-" : string.Join("; ", inFlight)),
                    tool.Replicas.Count.ToString(CultureInfo.InvariantCulture));
            }

            context.Console.Write(table);
            return ExitCodes.Ok;
        }));
        return new Command("coordination", "Look at the coordination tools the managers host (read-only).") { list };
    }
}
