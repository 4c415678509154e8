using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.Versioning;
using System.Security.Cryptography;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Playwright;
using Quintet.Client;
using Quintet.Console.Hosting;
using Quintet.Protocol.Admin;
using Quintet.Security;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// The console in a real browser (Debian's headless chromium driven by Playwright) against a secured cluster of three
/// managers: an admin signs in with a client certificate, browses the tree, deploys a package by dropping it on the drop
/// zone, migrates an instance, and when the manager the console talks to is killed the open page (and a new one) moves to
/// another manager; a reader signed in with a token sees no action and is refused the audit log. Each page is saved as a
/// screenshot under the cluster's log directory.
/// </summary>
public sealed class ConsoleBrowserTests(ITestOutputHelper output)
{
    private const string Chromium = "/usr/bin/chromium";
    private const string CounterClass = "Samples.Counter.CounterComponent";
    private static readonly TimeSpan Budget = TimeSpan.FromSeconds(60);
    private static readonly string[] CounterKeys = ["c-1", "c-2", "c-3"];
    private const string AccountClass = "Samples.BankAccount.AccountComponent";
    private const string AccountKey = "acct-1";

    [Fact]
    public async Task An_admin_deploys_migrates_and_fails_over_and_a_reader_sees_no_action_in_a_real_browser()
    {
        var started = Stopwatch.StartNew();
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(5));
        var chromium = DebianPackages.EnsureAsync(["chromium"], timeout.Token);

        var secret = RandomNumberGenerator.GetBytes(32);
        using var certificates = LocalCertificates.Create();
        var options = ClusterTest.Options(3);
        options.Certificates = certificates;
        options.Settings["Quintet:Security:Jwt:SigningKeys:0"] = Convert.ToBase64String(secret);
        var shots = Directory.CreateDirectory(Path.Combine(options.LogDirectory!, "console-screenshots")).FullName;
        var (adminCertificate, adminKey) = certificates.IssueClient("alice", "admin");

        var pageErrors = new List<string>();
        try
        {
            await ClusterTest.RunAsync(output, options, async cluster =>
            {
                await chromium;
                Step(started, "cluster up, chromium installed");

                // Chromium drops every connection when an interface of its network namespace changes
                // (ERR_NETWORK_CHANGED), and the tests beside this one add bridges to the host's. So the browser runs
                // in a namespace of its own and reaches the console on that namespace's bridge; without root, on the
                // host's loopback.
                await using var browserNetwork = IsolatedNetwork.WhyUnavailable() is null ? await IsolatedNetwork.CreateAsync(1, timeout.Token) : null;
                var consoleLog = new TestOutputLoggerProvider(output);
                await using var console = await StartConsoleAsync(cluster, certificates, browserNetwork, consoleLog);
                var address = console.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
                output.WriteLine($"console at {address}" + (browserNetwork is null ? "" : $", the browser in {browserNetwork}"));

                Environment.SetEnvironmentVariable("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
                using var playwright = await Playwright.CreateAsync();
                var executable = browserNetwork is null || OperatingSystem.IsWindows() ? Chromium : ChromiumIn(browserNetwork, options.LogDirectory!);
                await using var browser = await playwright.Chromium.LaunchAsync(new BrowserTypeLaunchOptions { ExecutablePath = executable, Headless = true });
                Assertions.SetDefaultExpectTimeout(30_000);
                var screens = new Screens(shots, output);
                var tree = new TreeNavigation(consoleLog, pageErrors, output);

                var pages = new List<IPage>();
                try
                {
                    // An admin signs in with a client certificate and its key, uploaded.
                    var admin = await NewPageAsync(browser, pageErrors, pages);
                    await admin.GotoAsync(address + "/");
                    await admin.WaitForURLAsync("**/signin**");
                    await admin.Locator("#certificate").SetInputFilesAsync(adminCertificate);
                    await admin.Locator("#key").SetInputFilesAsync(adminKey);
                    await screens.TakeAsync(admin, "sign-in");
                    await admin.ClickAsync("#sign-in");
                    await Assertions.Expect(admin.Locator(".answered-by")).ToContainTextAsync("answered by");
                    await Assertions.Expect(admin.Locator(".console-user")).ToContainTextAsync("alice");
                    await InteractiveAsync(admin);
                    await Assertions.Expect(admin.Locator("#blazor-error-ui")).ToBeHiddenAsync();
                    Assert.Equal(1, await admin.Locator("#blazor-error-ui a.reload").CountAsync());
                    await screens.TakeAsync(admin, "explorer-cluster");
                    Step(started, "admin signed in");

                    // The tree: a manager's overview and its recent log.
                    var second = cluster.Managers[1].Name;
                    await tree.SelectAsync(admin, $"Manager:{second}");
                    await Assertions.Expect(admin.Locator("h2")).ToHaveTextAsync($"Manager {second}");
                    await screens.TakeAsync(admin, "manager-overview");
                    await admin.ClickAsync("#tab-log");
                    await screens.TakeAsync(admin, "manager-log");

                    // Deploying: the package zip dropped on the drop zone (a drop event carrying a DataTransfer with the file).
                    await tree.SelectAsync(admin, $"Cluster:");
                    await admin.ClickAsync("#tab-deploy");
                    var zip = ComponentCallTests.CounterPackage();
                    var dataTransfer = await admin.EvaluateHandleAsync(
                        """
                        ([base64, name]) => {
                            const bytes = Uint8Array.from(atob(base64), c => c.charCodeAt(0));
                            const transfer = new DataTransfer();
                            transfer.items.add(new File([bytes], name, { type: 'application/zip' }));
                            return transfer;
                        }
                        """, new object[] { Convert.ToBase64String(zip), "counter.zip" });
                    await admin.Locator(".deploy-panel .fluent-inputfile-container").DispatchEventAsync("drop", new Dictionary<string, object> { ["dataTransfer"] = dataTransfer });
                    await Assertions.Expect(admin.Locator(".deploy-panel .call-done")).ToContainTextAsync("Deployed Counter 1.0.0");
                    await Assertions.Expect(admin.Locator($"[data-node='Class:{CounterClass}']")).ToBeVisibleAsync();
                    await screens.TakeAsync(admin, "deployed");
                    await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");
                    Step(started, "deployed by drag and drop");

                    // Instances appear in the class's list once called.
                    using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
                    {
                        foreach (var key in CounterKeys)
                        {
                            await ClusterTest.Eventually(() => client.GetComponent<ICounter>(key).AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None));
                        }
                    }

                    await tree.SelectAsync(admin, $"Class:{CounterClass}");
                    await Assertions.Expect(admin.Locator(".instance-list-header")).ToContainTextAsync("3 instances");
                    await admin.ClickAsync("tr[data-key='c-1']");
                    var details = admin.Locator(".instance-details");
                    await Assertions.Expect(details.Locator("dt", new() { HasText = "calls" })).ToBeVisibleAsync();
                    await screens.TakeAsync(admin, "class-instances");

                    // Migrating c-1 to the manager the list offers first.
                    var target = await details.Locator(".migrate-target").InputValueAsync();
                    await admin.ClickAsync("#migrate");
                    await Assertions.Expect(details.Locator(".call-done")).ToContainTextAsync($"to {target}");
                    await screens.TakeAsync(admin, "migrated");
                    Step(started, $"migrated c-1 to {target}");

                    // Moved, c-1 is placed on its new owner and live there from its next call; retired by hand, it is
                    // deactivated, and the call after that reactivates it there again.
                    using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
                    {
                        Assert.Equal(target, (await client.GetComponent<ICounter>("c-1").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None)).Manager);
                        await admin.ClickAsync("#retire");
                        await Assertions.Expect(details.Locator(".call-done", new() { HasText = "Retired on" })).ToContainTextAsync($"Retired on {target}");
                        await screens.TakeAsync(admin, "retired");
                        Assert.Equal(target, (await client.GetComponent<ICounter>("c-1").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None)).Manager);
                    }

                    // Dragging c-2 from the list onto another manager in the tree migrates it there, once confirmed.
                    var dragged = admin.Locator("tr[data-key='c-2']");
                    var draggedFrom = (await dragged.Locator("td").Nth(1).TextContentAsync())!.Replace(" (left)", "", StringComparison.Ordinal).Trim();
                    var dropOn = cluster.Managers.First(m => m.Name != draggedFrom).Name;
                    await dragged.DragToAsync(admin.Locator($"[data-node='Manager:{dropOn}']"));
                    await Assertions.Expect(admin.Locator(".drop-move")).ToContainTextAsync($"from {draggedFrom} to {dropOn}?");
                    await screens.TakeAsync(admin, "drag-to-migrate");
                    await admin.ClickAsync("#drop-migrate-confirm");
                    await Assertions.Expect(admin.Locator(".explorer-details > .call-done")).ToContainTextAsync($"Moved {CounterClass}/c-2 from {draggedFrom} to {dropOn}");
                    using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
                    {
                        Assert.Equal(dropOn, (await client.GetComponent<ICounter>("c-2").AddAsync(new AddRequest { Amount = 1 }, CancellationToken.None)).Manager);
                    }

                    Step(started, $"dragged c-2 from {draggedFrom} onto {dropOn}");

                    // A package's management module: the account's panel shows its balance, and an admin freezes it.
                    await new ComponentAdmin.ComponentAdminClient(cluster.Managers[0].Channel).DeployPackageAsync(
                        new DeployPackageRequest { PackageZip = Google.Protobuf.ByteString.CopyFrom(PackageArchive.ForAssembly(typeof(Samples.BankAccount.AccountComponent).Assembly)) }, deadline: DateTime.UtcNow.AddSeconds(60));
                    await ClusterTest.WaitForPackagesAsync(cluster.Managers, "BankAccount", "Counter");
                    using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
                    {
                        await ClusterTest.Eventually(() => client.GetComponent<Samples.BankAccount.IAccount>(AccountKey).DepositAsync(new Samples.BankAccount.Amount { Value = 1234 }, CancellationToken.None));
                    }

                    await admin.ClickAsync("#refresh");
                    await tree.SelectAsync(admin, $"Class:{AccountClass}");
                    await admin.ClickAsync($"tr[data-key='{AccountKey}']");
                    var panel = admin.Locator(".management-panel");
                    await Assertions.Expect(panel.Locator(".management-result")).ToContainTextAsync("1234");
                    var freeze = panel.Locator(".management-action[data-operation='Freeze']");
                    await freeze.Locator("input[name='reason']").FillAsync("fraud review");
                    await freeze.Locator(".management-run").ClickAsync();
                    await Assertions.Expect(panel.Locator(".confirmation")).ToContainTextAsync("Freeze this account?");
                    await freeze.Locator(".management-confirm").ClickAsync();
                    await Assertions.Expect(freeze.Locator(".call-done")).ToContainTextAsync("Freeze: done");
                    await Assertions.Expect(panel.Locator(".management-result")).ToContainTextAsync("fraud review");
                    await screens.TakeAsync(admin, "management-panel");
                    using (var client = QuintetClient.Over(cluster.Managers[0].Channel))
                    {
                        var frozen = await Assert.ThrowsAsync<RpcException>(() => client.GetComponent<Samples.BankAccount.IAccount>(AccountKey).DepositAsync(new Samples.BankAccount.Amount { Value = 1 }, CancellationToken.None));
                        Assert.Equal(StatusCode.FailedPrecondition, frozen.StatusCode);
                    }

                    Step(started, "froze an account from its management panel");

                    // Draining the third manager: its instances move to the other two, with progress.
                    var drained = cluster.Managers[2].Name;
                    await tree.SelectAsync(admin, $"Manager:{drained}");
                    await admin.ClickAsync("#drain");
                    await admin.ClickAsync("#drain-confirm");
                    await Assertions.Expect(admin.Locator(".drain-panel .call-done")).ToContainTextAsync($"Drained {drained}");
                    await screens.TakeAsync(admin, "drained");
                    Step(started, $"retired c-1, drained {drained}");

                    // The manager the console talks to is killed: the open page moves to another one by itself (its watch of
                    // the managers' view breaks, and the tree is read from the next manager at once), and so does a new page.
                    var answering = (await admin.Locator(".answered-by").TextContentAsync())!.Replace("answered by ", "", StringComparison.Ordinal).Trim();
                    var killed = cluster.Managers.Single(m => m.Name == answering);
                    var failover = Stopwatch.StartNew();
                    await cluster.KillAsync(killed);
                    await Assertions.Expect(admin.Locator(".answered-by")).Not.ToContainTextAsync(answering, new() { Timeout = 8_000 });
                    failover.Stop();
                    Step(started, $"killed {answering}; the open page moved in {failover.ElapsedMilliseconds} ms");
                    var linesBeforeReload = consoleLog.Lines.Count;
                    var reload = Stopwatch.StartNew();
                    await admin.ReloadAsync();
                    var loaded = reload.ElapsedMilliseconds;
                    await Assertions.Expect(admin.Locator(".answered-by")).ToContainTextAsync("answered by");
                    var answered = reload.ElapsedMilliseconds;
                    await InteractiveAsync(admin);
                    var now = await admin.Locator(".answered-by").TextContentAsync();
                    reload.Stop();
                    Assert.DoesNotContain(answering, now, StringComparison.Ordinal);

                    // The session had already passed over the killed manager: the new page asks it nothing (the bound on
                    // time is generous, for the machine is shared and a neighbouring test may be starting managers).
                    Assert.DoesNotContain(consoleLog.Lines.Skip(linesBeforeReload), line => line.Contains("did not answer", StringComparison.Ordinal));
                    Assert.True(reload.Elapsed < TimeSpan.FromSeconds(30),
                        $"a new page after {answering} was killed took {reload.Elapsed} (loaded at {loaded} ms, answered at {answered} ms, interactive at {reload.ElapsedMilliseconds} ms)");
                    await screens.TakeAsync(admin, "after-failover");
                    Step(started, $"a new page was {now} in {reload.ElapsedMilliseconds} ms");

                    // A reader signs in with a token: no action is offered, and the audit log (admins only) is refused.
                    var token = SecuredClusterFixture.CreateToken(secret, "rita", ["reader"]);
                    var reader = await NewPageAsync(browser, pageErrors, pages);
                    await reader.GotoAsync(address + "/signin");
                    await reader.Locator("#token").FillAsync(token);
                    await reader.ClickAsync("#sign-in");
                    await Assertions.Expect(reader.Locator(".answered-by")).ToContainTextAsync("answered by");
                    await Assertions.Expect(reader.Locator(".console-user")).ToContainTextAsync("rita (reader)");
                    await InteractiveAsync(reader);
                    Assert.Equal(0, await reader.Locator("#tab-deploy").CountAsync());
                    Assert.Equal(0, await reader.Locator(".console-nav a", new() { HasText = "Audit log" }).CountAsync());
                    await tree.SelectAsync(reader, $"Class:{CounterClass}");
                    await reader.ClickAsync("tr[data-key='c-2']");
                    await Assertions.Expect(reader.Locator(".instance-details dt", new() { HasText = "owner" })).ToBeVisibleAsync();
                    Assert.Equal(0, await reader.Locator("#migrate").CountAsync());
                    Assert.Equal(0, await reader.Locator("#retire").CountAsync());
                    await screens.TakeAsync(reader, "reader-instance");
                    await tree.SelectAsync(reader, $"Class:{AccountClass}");
                    await reader.ClickAsync($"tr[data-key='{AccountKey}']");
                    await Assertions.Expect(reader.Locator(".management-panel h4")).ToContainTextAsync("Account administration");
                    Assert.Equal(0, await reader.Locator(".management-action").CountAsync());
                    await screens.TakeAsync(reader, "reader-management");
                    await tree.SelectAsync(reader, $"Manager:{drained}");
                    await Assertions.Expect(reader.Locator("h2")).ToHaveTextAsync($"Manager {drained}");
                    Assert.Equal(0, await reader.Locator("#drain").CountAsync());
                    await reader.GotoAsync(address + "/audit");
                    await InteractiveAsync(reader);
                    await Assertions.Expect(reader.Locator(".call-error")).ToContainTextAsync("PERMISSION_DENIED");
                    await screens.TakeAsync(reader, "reader-audit-refused");

                    // Forced past the console, the reader's migration is refused by the managers themselves.
                    var alive = cluster.Managers.First(m => m != killed);
                    using var readerChannel = certificates.CreateChannel(alive.GrpcEndpoint, clientCertificate: null, bearerToken: token);
                    var refused = await Assert.ThrowsAsync<RpcException>(() => new ComponentAdmin.ComponentAdminClient(readerChannel)
                        .MigrateInstanceAsync(new MigrateInstanceRequest { ClassName = CounterClass, Key = "c-2", ToManager = alive.Name }, deadline: DateTime.UtcNow.AddSeconds(20)).ResponseAsync);
                    Assert.Equal(StatusCode.PermissionDenied, refused.StatusCode);
                    Step(started, "reader checked");

                    var errors = ErrorsSoFar(pageErrors);
                    Assert.True(errors.Count == 0, "errors in the browser:\n" + string.Join('\n', errors));
                }
                catch
                {
                    // What each page showed when the test gave up: a CI run keeps only the test's output.
                    foreach (var page in pages)
                    {
                        await DescribeAsync(page, screens);
                    }

                    throw;
                }
            });
        }
        catch
        {
            output.WriteLine("errors in the browser:\n" + string.Join('\n', ErrorsSoFar(pageErrors)));
            throw;
        }

        // Not asserted: on a machine shared with other work the cluster alone may take longer to start.
        output.WriteLine($"{started.Elapsed.TotalSeconds:F1} s in all (meant to stay under {Budget.TotalSeconds:F0} s)");
    }

    /// <summary>
    /// Selects nodes of the explorer's tree. Once in about forty runs here ASP.NET Core's renderer ends a page's circuit
    /// with an <see cref="ObjectDisposedException"/> thrown in its own <c>RenderTreeDiffBuilder</c> (dotnet/aspnetcore#62718,
    /// open); the page then shows the console's banner and no click answers. The test does what a user would: it reloads
    /// from the banner, once, and selects the node again; the browser errors the lost connection caused are written out,
    /// not counted. A circuit lost to anything else, or twice, fails the test.
    /// </summary>
    /// <summary>A copy of the browser errors, taken under the lock the pages' handlers add them under.</summary>
    private static List<string> ErrorsSoFar(List<string> pageErrors)
    {
        lock (pageErrors)
        {
            return [.. pageErrors];
        }
    }

    private sealed class TreeNavigation(TestOutputLoggerProvider consoleLog, List<string> pageErrors, ITestOutputHelper output)
    {
        private int _reloads;
        private int _errorsWhileUp;

        public async Task SelectAsync(IPage page, string node)
        {
            var banner = page.Locator("#blazor-error-ui");
            if (await banner.IsVisibleAsync())
            {
                await ReloadAfterLostCircuitAsync(page);
            }

            lock (pageErrors)
            {
                _errorsWhileUp = pageErrors.Count;
            }

            var selected = page.Locator($".node-selected[data-node='{node}']");
            await page.ClickAsync($"[data-node='{node}']");
            await Assertions.Expect(selected.Or(banner).First).ToBeVisibleAsync();
            if (await banner.IsVisibleAsync())
            {
                await ReloadAfterLostCircuitAsync(page);
                await page.ClickAsync($"[data-node='{node}']");
                await Assertions.Expect(selected).ToBeVisibleAsync();
            }
        }

        private async Task ReloadAfterLostCircuitAsync(IPage page)
        {
            // The console logs the circuit's fault before it tells the browser, but the line may still be on its way.
            string? fault = null;
            for (var waited = 0; fault is null && waited < 50; waited++)
            {
                fault = consoleLog.Lines.FirstOrDefault(line => line.Contains("Unhandled exception in circuit", StringComparison.Ordinal)
                    && line.Contains(nameof(ObjectDisposedException), StringComparison.Ordinal)
                    && line.Contains("RenderTreeDiffBuilder", StringComparison.Ordinal));
                if (fault is null)
                {
                    await Task.Delay(100);
                }
            }

            Assert.True(fault is not null && _reloads == 0,
                $"the page's circuit was lost ({_reloads} reloads before); the console's last lines:\n{string.Join('\n', consoleLog.Lines.TakeLast(10))}");
            _reloads++;
            lock (pageErrors)
            {
                var consequences = pageErrors.Skip(_errorsWhileUp).Where(error => error.StartsWith(page.Url, StringComparison.Ordinal)
                    && (error.Contains("'Connected' State", StringComparison.Ordinal) || error.Contains("circuit", StringComparison.Ordinal) || error.Contains(nameof(ObjectDisposedException), StringComparison.Ordinal))).ToList();
                pageErrors.RemoveAll(consequences.Contains);
                output.WriteLine($"the page's circuit was lost to dotnet/aspnetcore#62718; reloading from the banner. The browser's errors it caused:\n{string.Join('\n', consequences)}");
            }

            var banner = page.Locator("#blazor-error-ui");
            await banner.Locator("a.reload").ClickAsync();
            await Assertions.Expect(banner).ToBeHiddenAsync();
            await InteractiveAsync(page);
        }
    }

    /// <summary>Waits until the page's circuit is up: clicks on the server's prerendering would do nothing.</summary>
    private static Task InteractiveAsync(IPage page) => Assertions.Expect(page.Locator(".console[data-interactive='true']")).ToBeVisibleAsync();

    /// <summary>
    /// Writes what a page shows (its address, whether its circuit is up or reconnecting, the heading, the tabs, any
    /// call's status) and takes a screenshot; a page that cannot be read says why instead.
    /// </summary>
    private async Task DescribeAsync(IPage page, Screens screens)
    {
        try
        {
            var state = await page.EvaluateAsync<string>(
                """
                () => {
                    const text = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent.trim().replace(/\s+/g, ' ').slice(0, 200));
                    const reconnect = document.querySelector('#components-reconnect-modal');
                    return [
                        'interactive: ' + (document.querySelector('.console')?.getAttribute('data-interactive') ?? 'no console element'),
                        'reconnect ui: ' + (reconnect ? (reconnect.className || 'present') + (reconnect.open ? ', open' : '') : 'none'),
                        'selected: ' + text('.node-selected').join(' | '),
                        'heading: ' + text('h2').join(' | '),
                        'tabs: ' + Array.from(document.querySelectorAll('fluent-tab')).map(t => t.id).join(', '),
                        'statuses: ' + text('.call-error, .call-done, .call-running').join(' | '),
                    ].join('\n');
                }
                """);
            output.WriteLine($"page {page.Url}:\n{state}");
            await screens.TakeAsync(page, "at-failure");
        }
        catch (PlaywrightException e)
        {
            output.WriteLine($"page {page.Url} could not be read: {e.Message.Split('\n')[0]}");
        }
    }

    private static async Task<IPage> NewPageAsync(IBrowser browser, List<string> errors, List<IPage> pages)
    {
        // The console's certificate is the self-signed one it makes for loopback.
        var context = await browser.NewContextAsync(new BrowserNewContextOptions { IgnoreHTTPSErrors = true, ViewportSize = new ViewportSize { Width = 1400, Height = 900 } });
        var page = await context.NewPageAsync();
        pages.Add(page);
        page.SetDefaultTimeout(30_000);
        page.PageError += (_, error) => Add($"{page.Url}: {error}");
        page.RequestFailed += (_, request) => Add($"{page.Url}: request failed: {request.Method} {request.Url}: {request.Failure}");
        page.Response += (_, response) =>
        {
            if (response.Status >= 400)
            {
                Add($"{page.Url}: HTTP {response.Status} for {response.Url}");
            }
        };
        page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                Add($"{page.Url}: console: {message.Text}");
            }
        };
        return page;

        void Add(string error)
        {
            lock (errors)
            {
                errors.Add(error);
            }
        }
    }

    /// <summary>A script that runs chromium in the network's namespace; Playwright talks to it over inherited pipes.</summary>
    [UnsupportedOSPlatform("windows")]
    private static string ChromiumIn(IsolatedNetwork network, string directory)
    {
        var script = Path.Combine(directory, "chromium-in-namespace.sh");
        File.WriteAllText(script, $"#!/bin/sh\nexec {string.Join(' ', network.CommandPrefix(1))} {Chromium} \"$@\"\n");
        File.SetUnixFileMode(script, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
        return script;
    }

    private static async Task<WebApplication> StartConsoleAsync(LocalCluster cluster, LocalCertificates certificates, IsolatedNetwork? browserNetwork, TestOutputLoggerProvider log)
    {
        List<string> args =
        [
            "--endpoints", string.Join(',', cluster.Managers.Select(m => m.GrpcEndpoint)),
            "--ca", certificates.AuthorityFile,
        ];
        if (browserNetwork is null)
        {
            args.AddRange(["--listen", "https://127.0.0.1:0"]);
        }
        else
        {
            // Off loopback the console serves only a certificate it is given.
            using var certificate = certificates.Authority.IssueManager("console", [browserNetwork.HostAddress]);
            var (certificateFile, keyFile) = (Path.Combine(certificates.Directory, "console.crt"), Path.Combine(certificates.Directory, "console.key"));
            CertificateFiles.Write(certificate, certificateFile, keyFile, overwrite: true);
            args.AddRange(["--listen", $"https://{browserNetwork.HostAddress}:0", "--https-cert", certificateFile, "--https-key", keyFile]);
        }

        // Development: the pages' scripts and styles are served from the build's static web assets, as dotnet run does.
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = [.. args],
            ApplicationName = typeof(ConsoleOptions).Assembly.GetName().Name,
            EnvironmentName = Environments.Development,
        });
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(log);
        builder.Logging.AddFilter("Microsoft", LogLevel.Warning);
        builder.AddQuintetConsole([.. args]);
        var app = builder.Build();
        app.MapQuintetConsole();
        await app.StartAsync();
        return app;
    }

    private void Step(Stopwatch started, string what) => output.WriteLine($"{started.Elapsed.TotalSeconds,5:F1} s: {what}");

    /// <summary>Numbered full-page screenshots, each path printed.</summary>
    private sealed class Screens(string directory, ITestOutputHelper output)
    {
        private int _taken;

        public async Task TakeAsync(IPage page, string name)
        {
            var path = Path.Combine(directory, $"{++_taken:D2}-{name}.png");
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = path, FullPage = true });
            output.WriteLine($"screenshot: {path}");
        }
    }

    /// <summary>The console's log, in the test's output, and kept for the test to read.</summary>
    private sealed class TestOutputLoggerProvider(ITestOutputHelper output) : ILoggerProvider
    {
        public ConcurrentQueue<string> Lines { get; } = new();

        public ILogger CreateLogger(string categoryName) => new TestOutputLogger(output, Lines, categoryName);

        public void Dispose()
        {
        }

        private sealed class TestOutputLogger(ITestOutputHelper output, ConcurrentQueue<string> lines, string category) : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state)
                where TState : notnull => null;

            public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Information;

            public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
            {
                var message = formatter(state, exception);
                lines.Enqueue(exception is null ? message : $"{message}\n{exception}");
                try
                {
                    output.WriteLine($"{DateTime.UtcNow:HH:mm:ss.fff} console {logLevel} {category}: {message}{(exception is null ? "" : "\n" + exception)}");
                }
                catch (InvalidOperationException)
                {
                    // The test ended while the console was stopping.
                }
            }
        }
    }
}
