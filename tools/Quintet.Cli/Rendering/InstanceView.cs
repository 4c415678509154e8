using System.Globalization;
using System.Text.Json.Nodes;
using Quintet.Cli.Commands;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Rendering;

/// <summary>Prints the instances the managers host as one table, with what each manager lacking from it said.</summary>
internal static class InstanceView
{
    /// <summary>
    /// One document for every manager asked: its <c>ListInstancesResponse</c> fields (<c>instances</c>, <c>replicas</c>,
    /// <c>placedInCluster</c>) beside <c>manager</c>, <c>answered</c>, <c>unreachable</c> and <c>problem</c>.
    /// </summary>
    public static JsonObject ToJson(IReadOnlyCollection<ManagerInstances> answers)
    {
        var managers = new JsonArray();
        foreach (var answer in answers.OrderBy(a => a.Manager, StringComparer.Ordinal))
        {
            var node = answer.Response is null
                ? OutputFormats.ToNode(new ListInstancesResponse()).AsObject()
                : OutputFormats.ToNode(answer.Response).AsObject();
            node["manager"] = answer.Manager;
            node["answered"] = answer.Response is not null;
            node["unreachable"] = answer.Unreachable;
            node["problem"] = answer.Problem;
            managers.Add(node);
        }

        return new JsonObject
        {
            ["instances"] = answers.Sum(a => a.Response?.Instances.Count ?? 0),
            ["managersAnswered"] = answers.Count(a => a.Response is not null),
            ["managers"] = managers,
        };
    }

    public static void Write(IAnsiConsole console, IReadOnlyCollection<ManagerInstances> answers, bool debug)
    {
        var hosted = answers
            .Where(a => a.Response is not null)
            .SelectMany(a => a.Response!.Instances.Select(instance => (a.Manager, Instance: instance)))
            .OrderBy(i => i.Manager, StringComparer.Ordinal)
            .ThenBy(i => i.Instance.ClassName, StringComparer.Ordinal)
            .ThenBy(i => i.Instance.Key, StringComparer.Ordinal)
            .ToList();

        var table = new Table().AddColumns("manager", "class", "key", "state", "epoch", "calls", "errors", "p50 ms", "p99 ms");
        foreach (var (manager, instance) in hosted)
        {
            table.AddRow(
                Markup.Escape(manager),
                Markup.Escape(instance.ClassName),
                Markup.Escape(instance.Key),
                StateMarkup(instance.State),
                instance.Epoch.ToString(CultureInfo.InvariantCulture),
                instance.Calls.ToString(CultureInfo.InvariantCulture),
                instance.Errors == 0 ? "0" : $"[red]{instance.Errors.ToString(CultureInfo.InvariantCulture)}[/]",
                Latency(instance, instance.P50Ms),
                Latency(instance, instance.P99Ms));
        }

        var answered = answers.Count(a => a.Response is not null);
        table.Caption($"{hosted.Count} instance(s) on {answered} of {answers.Count} manager(s)");
        console.Write(table);

        WriteReplicas(console, answers);
        foreach (var missing in answers.Where(a => a.Response is null).OrderBy(a => a.Manager, StringComparer.Ordinal))
        {
            console.MarkupLine($"[yellow]{Markup.Escape(missing.Manager)}[/] {Markup.Escape(missing.Problem ?? "did not answer")}: its instances are not listed.");
        }

        if (debug)
        {
            WriteRecent(console, hosted);
        }
    }

    /// <summary>The replicas of actively replicated instances, with how far a joining replica's state has come.</summary>
    private static void WriteReplicas(IAnsiConsole console, IReadOnlyCollection<ManagerInstances> answers)
    {
        var replicas = answers
            .Where(a => a.Response is not null)
            .SelectMany(a => a.Response!.Replicas.Select(replica => (a.Manager, Replica: replica)))
            .OrderBy(r => r.Replica.ClassName, StringComparer.Ordinal)
            .ThenBy(r => r.Replica.Key, StringComparer.Ordinal)
            .ThenBy(r => r.Manager, StringComparer.Ordinal)
            .ToList();
        if (replicas.Count == 0)
        {
            return;
        }

        var table = new Table().AddColumns("class", "key", "replica on", "state", "replicas", "state transfer");
        foreach (var (manager, replica) in replicas)
        {
            table.AddRow(
                Markup.Escape(replica.ClassName),
                Markup.Escape(replica.Key),
                Markup.Escape(manager),
                replica.State switch
                {
                    "ready" => "[green]ready[/]",
                    "joining" => "[yellow]joining[/]",
                    _ => $"[red]{Markup.Escape(replica.State)}[/]",
                },
                replica.Members.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(Transfer(replica.Transfer)));
        }

        table.Caption($"{replicas.Count} active replica(s)");
        console.Write(table);
    }

    private static string Transfer(StateTransfer? transfer)
    {
        if (transfer is null)
        {
            return "-";
        }

        var percent = transfer.TotalBytes <= 0 ? 100 : 100.0 * transfer.BytesReceived / transfer.TotalBytes;
        var text = $"{transfer.BytesReceived / (1024.0 * 1024):F1} of {transfer.TotalBytes / (1024.0 * 1024):F1} MiB ({percent:F0}%)";
        return text + (transfer.Completed ? ", done" : string.Empty) + (transfer.Resumed ? ", resumed from another replica" : string.Empty);
    }

    private static void WriteRecent(IAnsiConsole console, List<(string Manager, InstanceInfo Instance)> hosted)
    {
        var recorded = hosted.Where(i => i.Instance.Recent.Count > 0).ToList();
        if (recorded.Count == 0)
        {
            console.MarkupLine("[grey]No recent invocations: managers record them only for classes whose QoS spec sets debug: true ('quintet qos set').[/]");
            return;
        }

        foreach (var (manager, instance) in recorded)
        {
            console.WriteLine();
            console.MarkupLine($"Recent invocations of [bold]{Markup.Escape(instance.ClassName)}[/] '{Markup.Escape(instance.Key)}' on {Markup.Escape(manager)}, newest last:");
            var table = new Table().AddColumns("at", "operation", "status", "ms", "request → response");
            foreach (var record in instance.Recent)
            {
                table.AddRow(
                    Markup.Escape(Time(record.At)),
                    Markup.Escape(record.Operation),
                    record.Status.Equals("OK", StringComparison.OrdinalIgnoreCase) ? Markup.Escape(record.Status) : $"[red]{Markup.Escape(record.Status)}[/]",
                    record.ElapsedMs.ToString("F2", CultureInfo.InvariantCulture),
                    Markup.Escape($"{record.Request} → {(record.Response.Length == 0 ? "-" : record.Response)}"));
            }

            console.Write(table);

            // Below the table, a line each: a lifeline is too long for a column.
            var lifelines = instance.Recent.Where(r => r.Lifeline.Count > 0).ToList();
            if (lifelines.Count > 0)
            {
                console.MarkupLine("Lifelines (each step in ms since the first manager received the call):");
                foreach (var record in lifelines)
                {
                    console.WriteLine($"  {Time(record.At)} {record.Operation}: {Lifeline(record)}");
                }
            }
        }
    }

    /// <summary>
    /// A call's lifeline on one line: each step with its time, and the manager where it changes (a forwarded call's
    /// first manager, then the owner); empty for a record without one.
    /// </summary>
    internal static string Lifeline(InvocationRecord record)
    {
        var text = new System.Text.StringBuilder();
        string? manager = null;
        foreach (var step in record.Lifeline)
        {
            if (text.Length > 0)
            {
                text.Append(" · ");
            }

            if (step.Manager != manager)
            {
                manager = step.Manager;
                text.Append(manager).Append(": ");
            }

            text.Append(step.Step).Append(' ').Append(step.AtMs.ToString("F2", CultureInfo.InvariantCulture));
        }

        return text.ToString();
    }

    /// <summary>The time of day of an ISO 8601 instant: the date is the same for records this recent; as sent when unreadable.</summary>
    private static string Time(string at) =>
        DateTimeOffset.TryParse(at, CultureInfo.InvariantCulture, DateTimeStyles.None, out var instant)
            ? instant.ToString("HH:mm:ss.fff", CultureInfo.InvariantCulture)
            : at;

    // Without a call there is no latency to show, rather than a misleading 0.
    private static string Latency(InstanceInfo instance, double milliseconds) =>
        instance.Calls == 0 ? "-" : milliseconds.ToString("F2", CultureInfo.InvariantCulture);

    private static string StateMarkup(string state) => state switch
    {
        "active" => "[green]active[/]",
        "migrating" or "placed" => $"[yellow]{state}[/]",
        "" => "?",
        _ => Markup.Escape(state),
    };
}
