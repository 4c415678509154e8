using System.CommandLine;
using System.Diagnostics;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet demo</c>: a local cluster of managers on loopback, running until Ctrl+C.</summary>
internal static class DemoCommand
{
    private static readonly TimeSpan WatchInterval = TimeSpan.FromSeconds(1);

    public static Command Create(CliContext context)
    {
        var managers = new Option<int>("--managers", "-n")
        {
            Description = "How many managers to start (1 to 16).",
            DefaultValueFactory = _ => 3,
        };
        managers.Validators.Add(result =>
        {
            var value = result.GetValueOrDefault<int>();
            if (value is < 1 or > 16)
            {
                result.AddError($"--managers must be between 1 and 16, not {value}.");
            }
        });
        var host = new Option<string>("--host")
        {
            Description = "The loopback address the managers listen on.",
            DefaultValueFactory = _ => "127.0.0.1",
        };
        var duration = new Option<TimeSpan?>("--duration")
        {
            Description = "Stop by itself after this long (for example 00:00:30); without it, run until Ctrl+C.",
        };

        var demo = new Command("demo", "Start a local cluster of managers on loopback and show it; Ctrl+C stops everything.")
        {
            managers, host, duration,
        };
        demo.SetAction((parse, cancellationToken) => RunAsync(
            context,
            parse.GetRequiredValue(managers),
            parse.GetRequiredValue(host),
            parse.GetValue(duration),
            cancellationToken));
        return demo;
    }

    private static async Task<int> RunAsync(CliContext context, int managers, string host, TimeSpan? duration, CancellationToken cancellationToken)
    {
        var console = context.Console;
        var options = new LocalClusterOptions
        {
            InitialManagers = managers,
            Host = host,
            ClusterName = "quintet-demo",
            LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-demo", DateTime.Now.ToString("yyyyMMdd-HHmmss", System.Globalization.CultureInfo.InvariantCulture)),
        };
        console.MarkupLine($"Starting a local Quintet cluster of [bold]{managers}[/] managers on {Markup.Escape(host)}.");
        console.MarkupLine($"[grey]Manager logs: {Markup.Escape(options.LogDirectory)}[/]");

        LocalCluster cluster;
        var started = Stopwatch.StartNew();
        try
        {
            var progress = new InlineProgress(line => console.MarkupLine($"  [grey]{started.Elapsed.TotalSeconds,5:F1}s[/] {Markup.Escape(line)}"));
            cluster = await LocalCluster.StartAsync(options, progress, cancellationToken);
        }
        catch (OperationCanceledException)
        {
            return ExitCodes.Interrupted;
        }
        catch (Exception ex) when (ex is TimeoutException or InvalidOperationException or FileNotFoundException)
        {
            return context.Fail(ExitCodes.Failed, $"the demo cluster did not start: {ex.Message}");
        }

        await using (cluster)
        {
            var first = cluster.Managers[0];
            var view = await cluster.ViewOfAsync(first, cancellationToken);
            console.Write(ClusterView.ToTable(view));
            console.MarkupLine($"The cluster is up after {started.Elapsed.TotalSeconds:F1} s. From another terminal: [bold]quintet cluster show --endpoint {first.GrpcEndpoint}[/]");
            console.MarkupLine(duration is { } d ? $"Running for {d.TotalSeconds:F0} s." : "Press [bold]Ctrl+C[/] to stop.");

            using var runFor = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            if (duration is { } limit)
            {
                runFor.CancelAfter(limit);
            }

            await WatchAsync(console, cluster, Summarize(view), runFor.Token);

            console.MarkupLine("Stopping the managers (each leaves the cluster)...");
            var stopping = Stopwatch.StartNew();
            var codes = await Task.WhenAll(cluster.Active.Select(m => StopQuietlyAsync(cluster, m)));
            console.MarkupLine($"Stopped {codes.Length} managers in {stopping.Elapsed.TotalSeconds:F1} s{(codes.All(c => c == 0) ? " cleanly" : $"; exit codes {string.Join(", ", codes)}")}.");
        }

        return cancellationToken.IsCancellationRequested ? ExitCodes.Interrupted : ExitCodes.Ok;
    }

    /// <summary>Prints a line whenever the membership changes, until <paramref name="cancellationToken"/> fires.</summary>
    private static async Task WatchAsync(IAnsiConsole console, LocalCluster cluster, string shown, CancellationToken cancellationToken)
    {
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(WatchInterval, cancellationToken);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            foreach (var observer in cluster.Active)
            {
                try
                {
                    var view = await cluster.ViewOfAsync(observer, cancellationToken);
                    var summary = Summarize(view);
                    if (summary != shown)
                    {
                        console.MarkupLine($"[grey]{DateTime.Now:HH:mm:ss}[/] view changed: {Markup.Escape(summary)}");
                        shown = summary;
                    }

                    break;
                }
                catch (RpcException)
                {
                    // That manager is busy or gone; ask the next one.
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    private static async Task<int> StopQuietlyAsync(LocalCluster cluster, ManagerProcess manager)
    {
        try
        {
            return await cluster.StopAsync(manager);
        }
        catch (TimeoutException)
        {
            await cluster.KillAsync(manager);
            return -9;
        }
    }

    private static string Summarize(ListManagersResponse view) =>
        string.Join(", ", view.Managers.Select(m =>
            $"{m.Report?.NodeName ?? m.Address} {ClusterView.StateName(m.State)}{(m.Reachable ? string.Empty : " (unreachable)")}"));

    /// <summary>Reports progress on the caller's thread at once, unlike <see cref="Progress{T}"/>, which posts.</summary>
    private sealed class InlineProgress(Action<string> report) : IProgress<string>
    {
        public void Report(string value) => report(value);
    }
}
