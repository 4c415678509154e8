using System.CommandLine;
using System.Diagnostics;
using Grpc.Core;
using Quintet.Cli;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Spectre.Console;

namespace Quintet.Demo;

/// <summary><c>quintet-demo</c>: a local cluster of managers on loopback, running until Ctrl+C.</summary>
internal static class DemoCommand
{
    private static readonly TimeSpan WatchInterval = TimeSpan.FromSeconds(1);

    /// <summary>The demo's command line: its options and what it runs.</summary>
    public static RootCommand CreateRoot(CliContext context)
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
        var killAfter = new Option<TimeSpan?>("--kill-after")
        {
            Description = "Kill -9 one manager (not the one the clients call) this long after the traffic starts; 3 or more managers. Default 00:00:05.",
            DefaultValueFactory = _ => TimeSpan.FromSeconds(5),
        };
        var noKill = new Option<bool>("--no-kill") { Description = "Kill no manager." };
        var insecure = new Option<bool>("--insecure")
        {
            Description = "Start the managers with security off (plaintext http, no certificates), as before security existed; by default the demo makes a CA and certificates and runs secured.",
        };

        var demo = new RootCommand("Start a local Quintet cluster on loopback, deploy the BankAccount sample, drive clients, kill a manager; Ctrl+C stops everything.")
        {
            managers, host, duration, killAfter, noKill, insecure,
        };
        demo.SetAction((parse, cancellationToken) => RunAsync(
            context,
            parse.GetRequiredValue(managers),
            parse.GetRequiredValue(host),
            parse.GetValue(duration),
            parse.GetValue(noKill) ? null : parse.GetValue(killAfter),
            parse.GetValue(insecure),
            cancellationToken));
        return demo;
    }

    private static async Task<int> RunAsync(CliContext context, int managers, string host, TimeSpan? duration, TimeSpan? killAfter, bool insecure, CancellationToken cancellationToken)
    {
        var console = context.Console;
        var options = new LocalClusterOptions
        {
            InitialManagers = managers,
            Host = host,
            ClusterName = "quintet-demo",
            LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-demo", DateTime.Now.ToString("yyyyMMdd-HHmmss", System.Globalization.CultureInfo.InvariantCulture)),
        };
        using var certificates = insecure ? null : DemoCertificates.Create(Path.Combine(options.LogDirectory, "certs"));
        options.Certificates = certificates?.Files;
        console.MarkupLine($"Starting a local Quintet cluster of [bold]{managers}[/] managers on {Markup.Escape(host)}{(insecure ? ", security off (--insecure)" : ", secured")}.");
        console.MarkupLine($"[grey]Manager logs: {Markup.Escape(options.LogDirectory)}[/]");
        if (certificates is not null)
        {
            console.MarkupLine($"[grey]Certificates (a CA of its own, the managers' certificate, clients '{DemoCertificates.ClientUser}' and '{DemoCertificates.AdminUser}' with role admin): {Markup.Escape(certificates.Directory)}[/]");
        }

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
            var show = certificates?.ClusterShowCommand(first.GrpcEndpoint) ?? $"quintet cluster show --endpoint {first.GrpcEndpoint}";
            console.MarkupLine($"The cluster is up after {started.Elapsed.TotalSeconds:F1} s. To look at it from another terminal:");

            // Written past the console's wrapping, on one line, so that it can be copied as it is.
            await console.Profile.Out.Writer.WriteLineAsync("  " + show);
            console.MarkupLine(duration is { } d ? $"Running for {d.TotalSeconds:F0} s." : "Press [bold]Ctrl+C[/] to stop.");

            using var runFor = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            if (duration is { } limit)
            {
                runFor.CancelAfter(limit);
            }

            DemoWorkload? workload = null;
            var summary = new DemoSummary();
            try
            {
                await cluster.WaitForGroupViewAsync(cluster.Managers, runFor.Token);
                console.MarkupLine("Deploying the BankAccount sample (samples/BankAccount: primary/backup accounts) through the first manager...");
                (workload, var package) = await DemoWorkload.StartAsync(cluster.Managers, certificates, runFor.Token);
                console.MarkupLine($"Deployed [bold]{Markup.Escape(package.Name)}[/] {Markup.Escape(package.Version)} on every manager; 8 clients deposit into their accounts, each account on one manager with its backup on another; the client knows every manager and fails over{(certificates is null ? "" : $", presenting the client certificate of '{DemoCertificates.ClientUser}'")}.");
                if (killAfter is not null && managers < 3)
                {
                    console.MarkupLine("[grey]No manager is killed: that takes 3 or more, so that a majority survives.[/]");
                    killAfter = null;
                }

                await WatchAsync(console, cluster, Summarize(view), workload, killAfter, summary, runFor.Token);
            }
            catch (OperationCanceledException)
            {
                // Ctrl+C or --duration.
            }
            catch (RpcException e)
            {
                context.Fail(ExitCodes.Failed, $"the demo could not deploy the BankAccount sample: {e.StatusCode}: {e.Status.Detail}");
            }
            finally
            {
                if (workload is not null)
                {
                    await workload.StopAsync();
                    summary.Calls = workload.Calls;
                    summary.Errors = workload.Errors;
                    summary.LastError = workload.LastError;
                    summary.Retries = workload.Retries;
                    try
                    {
                        using var verifying = new CancellationTokenSource(TimeSpan.FromSeconds(60));
                        summary.Verification = await workload.VerifyAsync(verifying.Token);
                    }
                    catch (Exception e) when (e is RpcException or OperationCanceledException)
                    {
                        summary.Verification = $"The accounts could not be read back: {e.Message}";
                    }

                    await workload.DisposeAsync();
                }
            }

            console.MarkupLine(Markup.Escape(summary.Describe(started.Elapsed)));

            console.MarkupLine("Stopping the managers (each leaves the cluster)...");
            var stopping = Stopwatch.StartNew();
            var codes = await Task.WhenAll(cluster.Active.Select(m => StopQuietlyAsync(cluster, m)));
            console.MarkupLine($"Stopped {codes.Length} managers in {stopping.Elapsed.TotalSeconds:F1} s{(codes.All(c => c == 0) ? " cleanly" : $"; exit codes {string.Join(", ", codes)}")}.");
        }

        return cancellationToken.IsCancellationRequested ? ExitCodes.Interrupted : ExitCodes.Ok;
    }

    /// <summary>
    /// Prints a line whenever the membership changes and the clients' rate every few seconds; kills one manager (not
    /// the clients') after <paramref name="killAfter"/>; until <paramref name="cancellationToken"/> fires.
    /// </summary>
    private static async Task WatchAsync(IAnsiConsole console, LocalCluster cluster, string shown, DemoWorkload workload, TimeSpan? killAfter, DemoSummary summary, CancellationToken cancellationToken)
    {
        var traffic = Stopwatch.StartNew();
        var lastCalls = 0L;
        var lastRate = TimeSpan.Zero;
        while (!cancellationToken.IsCancellationRequested)
        {
            await Task.Delay(WatchInterval, cancellationToken);
            if (traffic.Elapsed - lastRate >= TimeSpan.FromSeconds(5))
            {
                var calls = workload.Calls;
                console.MarkupLine($"[grey]{DateTime.Now:HH:mm:ss}[/] clients: {(calls - lastCalls) / (traffic.Elapsed - lastRate).TotalSeconds:F0} calls/s, {calls} in all, {workload.Errors} errors");
                (lastCalls, lastRate) = (calls, traffic.Elapsed);
            }

            if (killAfter is { } after && traffic.Elapsed >= after)
            {
                killAfter = null;
                var victim = cluster.Active[^1];
                var callsBefore = workload.Calls;
                console.MarkupLine($"[bold]Killing {victim.Name}[/] (kill -9, pid {victim.ProcessId}).");
                var killed = Stopwatch.StartNew();
                await cluster.KillAsync(victim, cancellationToken);
                await cluster.WaitForGroupViewAsync(cluster.Active, cancellationToken);
                summary.FailoverSeconds = killed.Elapsed.TotalSeconds;
                summary.Killed = victim.Name;
                console.MarkupLine($"The other managers installed a view without {victim.Name} {killed.Elapsed.TotalSeconds:F1} s after the kill; the clients made {workload.Calls - callsBefore} calls meanwhile, {workload.Errors} errors so far.");
            }

            foreach (var observer in cluster.Active)
            {
                try
                {
                    var view = await cluster.ViewOfAsync(observer, cancellationToken);
                    var line = Summarize(view);
                    if (line != shown)
                    {
                        console.MarkupLine($"[grey]{DateTime.Now:HH:mm:ss}[/] view changed: {Markup.Escape(line)}");
                        shown = line;
                        summary.ViewChanges++;
                    }

                    break;
                }
                catch (RpcException)
                {
                    // That manager is busy or gone; ask the next one.
                }
            }
        }
    }

    /// <summary>What the demo did, printed at the end.</summary>
    private sealed class DemoSummary
    {
        public long Calls { get; set; }

        public long Errors { get; set; }

        public string? LastError { get; set; }

        public int ViewChanges { get; set; }

        public long Retries { get; set; }

        public string? Verification { get; set; }

        public string? Killed { get; set; }

        public double FailoverSeconds { get; set; }

        public string Describe(TimeSpan elapsed) =>
            $"Summary: {Calls} deposits to the BankAccount sample, {Errors} errors{(LastError is null ? string.Empty : $" (last: {LastError})")}, {Retries} calls failed over to another manager; " +
            $"{ViewChanges} membership change(s) seen" +
            (Killed is null ? "; no manager killed" : $"; {Killed} killed, new view of the survivors {FailoverSeconds:F1} s later") +
            $"; ran {elapsed.TotalSeconds:F0} s.{(Verification is null ? string.Empty : " " + Verification)}";
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
