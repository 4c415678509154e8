using System.Diagnostics;
using System.Globalization;
using Google.Protobuf;
using Microsoft.Playwright;
using Quintet.Client;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Benchmarks;

/// <summary>
/// The console on a cluster of very many instances, in a real browser (Debian's headless chromium, driven by
/// Playwright): how long a page takes to show the instance list, an instance's details and the list's last page, and
/// what the managers spend while one console watches the cluster page, beside the same cluster with no console.
/// </summary>
internal static class ConsoleBenchmark
{
    private const string Chromium = "/usr/bin/chromium";
    private const string CounterClass = "Samples.Counter.CounterComponent";

    public static async Task RunAsync(int instances, int managers, int loads)
    {
        Console.WriteLine($"Quintet console benchmark: {managers} managers, {instances} instances, {loads} loads of each page; {Environment.ProcessorCount} cores; {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC.");
        Console.WriteLine("The console in a process of its own; headless chromium; each load is a new page from navigation to the element shown.");
        Console.WriteLine();

        using var setup = new CancellationTokenSource(TimeSpan.FromMinutes(10));
        var chromium = DebianPackages.EnsureAsync(["chromium"], setup.Token);
        var options = new LocalClusterOptions { InitialManagers = managers, LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-bench-console", DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture)) };
        await using var cluster = await LocalCluster.StartAsync(options);
        await cluster.WaitForGroupViewAsync(cluster.Managers);
        await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(CounterComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
        await TreeBenchmark.WaitForCounterAsync(cluster);
        var clients = cluster.Managers.Select(m => QuintetClient.Over(m.Channel)).ToArray();
        try
        {
            var activation = Stopwatch.StartNew();
            await TreeBenchmark.ActivateAsync(clients, 0, instances);
            Console.WriteLine($"{instances} instances activated in {activation.Elapsed.TotalSeconds:F1} s.");
        }
        finally
        {
            foreach (var client in clients)
            {
                client.Dispose();
            }
        }

        await chromium;
        var (console, address) = await StartConsoleAsync(cluster, options.LogDirectory!);
        await using var stopConsole = console;
        Environment.SetEnvironmentVariable("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
        using var playwright = await Playwright.CreateAsync();
        await using var browser = await playwright.Chromium.LaunchAsync(new BrowserTypeLaunchOptions { ExecutablePath = Chromium, Headless = true });
        var context = await browser.NewContextAsync(new BrowserNewContextOptions { IgnoreHTTPSErrors = true, ViewportSize = new ViewportSize { Width = 1400, Height = 900 } });

        // Signed in once (security off: a name); every load below is a fresh page of the same session.
        var signIn = await context.NewPageAsync();
        signIn.SetDefaultTimeout(60_000);
        await signIn.GotoAsync(address + "/signin");
        await signIn.ClickAsync("#sign-in");
        await signIn.Locator(".answered-by").WaitForAsync();
        await signIn.CloseAsync();

        var list = new List<double>();
        var details = new List<double>();
        var last = new List<double>();
        var lastKey = TreeBenchmark.Key(instances - 1);
        for (var load = 0; load <= loads; load++)
        {
            var page = await context.NewPageAsync();
            page.SetDefaultTimeout(60_000);
            var started = Stopwatch.GetTimestamp();
            await page.GotoAsync(address + "/");
            await page.Locator(".console[data-interactive='true']").WaitForAsync();
            await page.ClickAsync($"[data-node='Class:{CounterClass}']");
            await page.Locator(".instance-rows tr[data-key]").First.WaitForAsync();
            var listShown = Stopwatch.GetElapsedTime(started).TotalMilliseconds;

            var clicked = Stopwatch.GetTimestamp();
            await page.Locator(".instance-rows tr[data-key]").First.ClickAsync();
            await page.Locator(".instance-details dt", new() { HasText = "calls" }).WaitForAsync();
            var detailsShown = Stopwatch.GetElapsedTime(clicked).TotalMilliseconds;

            // The scroll bar dragged to the end: the list's last page, by its offset.
            var scrolled = Stopwatch.GetTimestamp();
            await page.EvalOnSelectorAsync(".instance-rows", "rows => rows.scrollTop = rows.scrollHeight");
            await page.Locator($".instance-rows tr[data-key='{lastKey}']").WaitForAsync();
            var lastShown = Stopwatch.GetElapsedTime(scrolled).TotalMilliseconds;
            await page.CloseAsync();

            // The first load warms the browser, the console's circuit code and the managers' paths: not counted.
            if (load > 0)
            {
                list.Add(listShown);
                details.Add(detailsShown);
                last.Add(lastShown);
            }
        }

        Console.WriteLine();
        Console.WriteLine($"{"page",-52} {"p50 ms",9} {"p99 ms",9}");
        foreach (var (name, times) in new[] { ("instance list (navigation to the first row)", list), ("an instance's details (click to its figures)", details), ("the list's last instance (scroll to the end)", last) })
        {
            times.Sort();
            Console.WriteLine($"{name,-52} {times[times.Count / 2],9:F0} {times[Math.Min(times.Count - 1, (int)(times.Count * 0.99))],9:F0}");
        }

        // The managers' CPU: no console page open, then one page on the cluster (live statistics, the tree read every
        // 5 s), then none again; each window 20 s after a settling pause.
        int[] pids = [.. cluster.Managers.Select(m => m.ProcessId)];
        var before = await CpuAsync(pids);
        var watcher = await context.NewPageAsync();
        await watcher.GotoAsync(address + "/");
        await watcher.Locator(".console[data-interactive='true']").WaitForAsync();
        var watching = await CpuAsync(pids);
        await watcher.CloseAsync();
        var after = await CpuAsync(pids);
        Console.WriteLine();
        Console.WriteLine($"Managers' CPU, all {managers} together (20 s windows): no console {before:F1} ms/s; one console on the cluster page {watching:F1} ms/s ({watching / before:F2}x); closed again {after:F1} ms/s ({after / before:F2}x).");
    }

    private static async Task<double> CpuAsync(int[] pids)
    {
        await Task.Delay(TimeSpan.FromSeconds(5));
        var before = ProcessCpu.Of(pids);
        var clock = Stopwatch.StartNew();
        await Task.Delay(TimeSpan.FromSeconds(20));
        return (ProcessCpu.Of(pids) - before).TotalMilliseconds / clock.Elapsed.TotalSeconds;
    }

    /// <summary>
    /// The console as its own process (<c>dotnet quintet-console.dll</c>, built beside this benchmark), serving its
    /// scripts and styles from the build's static web assets as <c>dotnet run</c> does; ready once it answers.
    /// </summary>
    private static async Task<(PeerProcess Process, string Address)> StartConsoleAsync(LocalCluster cluster, string logDirectory)
    {
        var root = AppContext.BaseDirectory;
        while (!File.Exists(Path.Combine(root, "Quintet.sln")))
        {
            root = Path.GetDirectoryName(root.TrimEnd(Path.DirectorySeparatorChar)) ?? throw new InvalidOperationException($"No Quintet.sln above {AppContext.BaseDirectory}.");
        }

        var configuration = Path.GetFileName(Path.GetDirectoryName(AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar)))!;
        var dll = Path.Combine(root, "src", "Quintet.Console", "bin", configuration, "net10.0", "quintet-console.dll");
        var port = PeerProcess.FreePort();
        var address = $"https://127.0.0.1:{port}";
        var log = Path.Combine(logDirectory, "console.log");
        var process = PeerProcess.Start("console", "/usr/bin/env", ["ASPNETCORE_ENVIRONMENT=Development", "dotnet", dll, "--endpoints", string.Join(',', cluster.Managers.Select(m => m.GrpcEndpoint)), "--listen", address], log);
        using var http = new HttpClient(new HttpClientHandler { ServerCertificateCustomValidationCallback = HttpClientHandler.DangerousAcceptAnyServerCertificateValidator });
        var waited = Stopwatch.StartNew();
        while (true)
        {
            try
            {
                using var answer = await http.GetAsync(address + "/signin");
                if (answer.IsSuccessStatusCode)
                {
                    break;
                }
            }
            catch (HttpRequestException) when (!process.HasExited && waited.Elapsed < TimeSpan.FromSeconds(60))
            {
            }

            if (process.HasExited || waited.Elapsed > TimeSpan.FromSeconds(60))
            {
                await process.DisposeAsync();
                throw new InvalidOperationException($"The console did not answer at {address}:\n{process.TailLog()}");
            }

            await Task.Delay(200);
        }

        Console.WriteLine($"console (pid {process.ProcessId}) at {address}, its log in {log}");
        return (process, address);
    }
}
