using System.Globalization;
using Google.Protobuf;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Rendering;

/// <summary>Prints a <see cref="ListManagersResponse"/> as a table or as JSON.</summary>
internal static class ClusterView
{
    private static readonly JsonFormatter Json = new(JsonFormatter.Settings.Default.WithFormatDefaultValues(true).WithIndentation());

    public static void Write(IAnsiConsole console, ListManagersResponse view, string format)
    {
        if (format == OutputFormats.Json)
        {
            // Written raw: Spectre would read JSON brackets as markup.
            console.Profile.Out.Writer.WriteLine(Json.Format(view));
            return;
        }

        console.Write(ToTable(view));
        foreach (var m in view.Managers.Where(m => m.Report is { Problems.Count: > 0 }).OrderBy(m => m.Report.NodeName, StringComparer.Ordinal))
        {
            foreach (var problem in m.Report.Problems)
            {
                console.MarkupLine($"[red]{Markup.Escape(m.Report.NodeName)}[/]: {Markup.Escape(problem)}");
            }
        }

        foreach (var m in view.Managers.Where(m => m.Report is { Extensions.Count: > 0 }).OrderBy(m => m.Report.NodeName, StringComparer.Ordinal))
        {
            console.MarkupLine($"{Markup.Escape(m.Report.NodeName)} runs extensions: {Markup.Escape(string.Join(", ", m.Report.Extensions))}");
        }
    }

    public static Table ToTable(ListManagersResponse view)
    {
        var table = new Table()
            .Title($"cluster [bold]{Markup.Escape(view.ClusterName)}[/], as seen by {Markup.Escape(view.AnsweredBy)}")
            .AddColumns("Manager", "Cluster address", "State", "Reachable", "gRPC endpoint", "PID", "Memory", "Up for", "Uid", "Problems");
        foreach (var m in view.Managers.OrderBy(m => m.Report?.NodeName ?? m.Address, StringComparer.Ordinal))
        {
            var report = m.Report;
            var name = report?.NodeName ?? "?";
            if (m.IsLeader)
            {
                name += " (leader)";
            }

            if (m.IsSelf)
            {
                name += " *";
            }

            table.AddRow(
                Markup.Escape(name),
                Markup.Escape(HostPort(m.Address)),
                StateMarkup(m.State),
                m.Reachable ? "yes" : "[red]no[/]",
                Markup.Escape(report?.GrpcEndpoint ?? "-"),
                report is null ? "-" : report.ProcessId.ToString(CultureInfo.InvariantCulture),
                report is null ? "-" : $"{report.WorkingSetBytes / (1024.0 * 1024.0):F0} MB",
                report?.StartedAt is { } started ? Uptime(DateTimeOffset.UtcNow - started.ToDateTimeOffset()) : "-",
                m.Uid.ToString(CultureInfo.InvariantCulture),
                report is null ? "-" : report.Problems.Count == 0 ? "none" : $"[red]{report.Problems.Count.ToString(CultureInfo.InvariantCulture)}[/]");
        }

        var problems = view.Managers.Sum(m => m.Report?.Problems.Count ?? 0);
        table.Caption($"{view.Managers.Count(m => m.State == ManagerState.Up)} of {view.Managers.Count} Up · * answered · '-': no report from that manager"
            + (problems > 0 ? $" · [red]{problems.ToString(CultureInfo.InvariantCulture)} problem(s), listed below[/]" : string.Empty));
        return table;
    }

    public static string StateName(ManagerState state) =>
        state.ToString().Replace("MANAGER_STATE_", string.Empty, StringComparison.Ordinal) switch
        {
            "WeaklyUp" => "Weakly up",
            var s => s,
        };

    /// <summary>The host:port of a cluster address: the cluster name is already in the title.</summary>
    private static string HostPort(string address)
    {
        var at = address.LastIndexOf('@');
        return at >= 0 ? address[(at + 1)..] : address;
    }

    private static string StateMarkup(ManagerState state) => state switch
    {
        ManagerState.Up => "[green]Up[/]",
        ManagerState.Joining or ManagerState.WeaklyUp => $"[yellow]{StateName(state)}[/]",
        _ => $"[red]{StateName(state)}[/]",
    };

    private static string Uptime(TimeSpan span) => span.TotalHours >= 1
        ? $"{(int)span.TotalHours}h{span.Minutes:D2}m"
        : span.TotalMinutes >= 1 ? $"{(int)span.TotalMinutes}m{span.Seconds:D2}s" : $"{Math.Max(0, span.Seconds)}s";
}
