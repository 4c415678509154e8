using System.CommandLine;
using System.Globalization;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster stores</c>: each manager's checkpoint store, as the store describes itself.</summary>
internal static class ClusterStoresCommand
{
    // The answering manager waits up to 10 s for the others; this leaves it room to answer.
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var manager = new Option<string?>("--manager", "-m") { Description = "Only this manager's store (its node name); default: every manager's." };
        var command = new Command("stores", "Print each manager's checkpoint store: its kind, where it is, what it holds, its last write, whether it takes writes, and figures of its kind.")
        {
            manager, endpoint, output,
        };
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var response = await new ClusterAdmin.ClusterAdminClient(channel).ListCheckpointStoresAsync(
                new ListCheckpointStoresRequest { Manager = parse.GetValue(manager) ?? "" }, deadline: deadline, cancellationToken: token);
            if (parse.GetRequiredValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            Write(context, response);
            return ExitCodes.Ok;
        }));
        return command;
    }

    private static void Write(CliContext context, ListCheckpointStoresResponse response)
    {
        var table = new Table().Title("checkpoint stores").AddColumns("manager", "kind", "state", "streams", "live", "on disk", "last write (UTC)", "writes / commits", "where");
        foreach (var store in response.Stores)
        {
            table.AddRow(
                Markup.Escape(store.Manager),
                Markup.Escape(store.Kind),
                store.Healthy ? "[green]healthy[/]" : "[red]unhealthy[/]",
                store.HasStreams ? store.Streams.ToString(CultureInfo.InvariantCulture) : "?",
                store.HasLiveBytes ? Bytes(store.LiveBytes) : "?",
                store.HasStoredBytes ? Bytes(store.StoredBytes) : "?",
                store.LastWrite is { } last ? last.ToDateTime().ToString("yyyy-MM-dd HH:mm:ss", CultureInfo.InvariantCulture) : "none",
                string.Create(CultureInfo.InvariantCulture, $"{store.Writes} / {store.Commits}"),
                Markup.Escape(store.Location));
        }

        context.Console.Write(table);
        foreach (var store in response.Stores)
        {
            if (!store.Healthy)
            {
                context.Console.MarkupLine($"[red]{Markup.Escape(store.Manager)}:[/] {Markup.Escape(store.Problem)}");
            }
        }

        foreach (var store in response.Stores.Where(s => s.Details.Count > 0))
        {
            context.Console.MarkupLine($"{Markup.Escape(store.Manager)} ({Markup.Escape(store.Kind)}): {Markup.Escape(string.Join("; ", store.Details.Select(d => $"{d.Name}: {d.Value}")))}");
        }

        if (response.Unreachable.Count > 0)
        {
            context.Console.MarkupLine($"[yellow]No answer in time from: {Markup.Escape(string.Join(", ", response.Unreachable))}[/]");
        }
    }

    /// <summary>Bytes for a person: B, KiB, MiB or GiB.</summary>
    internal static string Bytes(long bytes) => bytes switch
    {
        < 1024 => string.Create(CultureInfo.InvariantCulture, $"{bytes} B"),
        < 1024 * 1024 => string.Create(CultureInfo.InvariantCulture, $"{bytes / 1024.0:0.#} KiB"),
        < 1024L * 1024 * 1024 => string.Create(CultureInfo.InvariantCulture, $"{bytes / (1024.0 * 1024):0.#} MiB"),
        _ => string.Create(CultureInfo.InvariantCulture, $"{bytes / (1024.0 * 1024 * 1024):0.##} GiB"),
    };
}
