using System.CommandLine;
using System.Globalization;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster top</c>: every manager's calls per second, latency percentiles and instances, live.</summary>
internal static class ClusterTopCommand
{
    /// <summary>The bound on reaching the manager; the stream itself runs until --count or Ctrl+C.</summary>
    private static readonly TimeSpan ConnectDeadline = TimeSpan.FromSeconds(20);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var interval = new Option<double>("--interval", "-i") { Description = "Seconds between updates, 0.5 to 10 (default 1).", DefaultValueFactory = _ => 1 };
        var count = new Option<int>("--count", "-n") { Description = "Stop after this many updates (default: until Ctrl+C).", DefaultValueFactory = _ => 0 };
        var command = new Command("top", "Print every manager's calls per second (served as owner), p50 and p99 latency, instances owned and working set, once per interval, until --count or Ctrl+C. With --output json, one JSON object a line.")
        {
            interval, count, endpoint, output,
        };
        command.SetAction((parse, token) =>
        {
            var seconds = parse.GetValue(interval);
            if (seconds is < 0.5 or > 10 || double.IsNaN(seconds))
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--interval {seconds.ToString(CultureInfo.InvariantCulture)} is out of range: from 0.5 to 10 seconds."));
            }

            var updates = parse.GetValue(count);
            if (updates < 0)
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--count {updates} is negative: give the number of updates to print, or leave it out to run until Ctrl+C."));
            }

            var json = OutputFormats.IsJson(parse.GetRequiredValue(output));
            return AdminCall.RunAsync(context, parse.GetValue(endpoint), ConnectDeadline, async (channel, _) =>
            {
                using var call = new ClusterAdmin.ClusterAdminClient(channel).WatchStatistics(
                    new WatchStatisticsRequest { IntervalMs = (int)Math.Round(seconds * 1000) }, cancellationToken: token);
                var printed = 0;
                try
                {
                    while ((updates == 0 || printed < updates) && await call.ResponseStream.MoveNext(token))
                    {
                        Write(context, call.ResponseStream.Current, json);
                        printed++;
                    }
                }
                catch (Exception e) when (token.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
                {
                    // Ctrl+C is how a top ends.
                }

                return ExitCodes.Ok;
            });
        });
        return command;
    }

    private static void Write(CliContext context, ClusterStatistics statistics, bool json)
    {
        if (json)
        {
            OutputFormats.WriteJsonLine(context, statistics);
            return;
        }

        var table = new Table()
            .Title($"{statistics.Time.ToDateTime().ToString("HH:mm:ss", CultureInfo.InvariantCulture)} UTC, as {Markup.Escape(statistics.AnsweredBy)} sees it")
            .AddColumns("manager", "calls/s", "p50 ms", "p99 ms", "instances", "working set MB");
        foreach (var manager in statistics.Managers)
        {
            table.AddRow(
                Markup.Escape(manager.Manager),
                manager.CallsPerSecond.ToString("F1", CultureInfo.InvariantCulture),
                manager.P50Ms.ToString("F2", CultureInfo.InvariantCulture),
                manager.P99Ms.ToString("F2", CultureInfo.InvariantCulture),
                manager.OwnedInstances.ToString(CultureInfo.InvariantCulture),
                (manager.WorkingSetBytes / (1024.0 * 1024)).ToString("F0", CultureInfo.InvariantCulture));
        }

        foreach (var silent in statistics.Unanswered)
        {
            table.AddRow(Markup.Escape(silent), "[yellow]no answer[/]", "", "", "", "");
        }

        context.Console.Write(table);
    }
}
