using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.Versioning;
using System.Text;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Quintet.Tests;

namespace Quintet.Packaging.Tests;

/// <summary>
/// The Debian package built by installer/linux/build-deb.sh: what it holds, its unit checked by systemd-analyze, and the
/// package installed on this machine, its manager run the way the unit runs it, joining a cluster, then purged.
/// </summary>
[Collection(PackageBuilds.Name)]
[SupportedOSPlatform("linux")]
public sealed class DebPackageTests(DebPackageFixture fixture, ITestOutputHelper output) : IClassFixture<DebPackageFixture>
{
    private const string UnitPath = "/usr/lib/systemd/system/quintet-manager.service";
    private const string ProxyUnitPath = "/usr/lib/systemd/system/quintet-proxy.service";
    private const string StateDirectory = "/var/lib/quintet";
    private static readonly TimeSpan CommandTimeout = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task Package_holds_the_manager_the_cli_the_proxy_their_units_the_settings_files_as_conffiles_and_its_scripts()
    {
        output.WriteLine($"built {fixture.Package} in {fixture.BuildTime.TotalSeconds:F0} s");
        var info = await Command.CheckedAsync("dpkg-deb", ["--info", fixture.Package], CommandTimeout);
        Assert.Contains("Package: quintet", info, StringComparison.Ordinal);
        Assert.Contains("Architecture: all", info, StringComparison.Ordinal);
        Assert.Contains("Depends: aspnetcore-runtime-10.0", info, StringComparison.Ordinal);
        foreach (var script in new[] { "postinst", "prerm", "postrm", "conffiles" })
        {
            Assert.Matches($@"\s{script}\s", info);
        }

        var conffiles = await Command.CheckedAsync("dpkg-deb", ["--ctrl-tarfile", fixture.Package], CommandTimeout);
        Assert.Contains("conffiles", conffiles, StringComparison.Ordinal);
        var extracted = Directory.CreateTempSubdirectory("quintet-deb-control-").FullName;
        try
        {
            await Command.CheckedAsync("dpkg-deb", ["--control", fixture.Package, extracted], CommandTimeout);
            Assert.Equal(["/etc/quintet/manager.env", "/etc/quintet/proxy.env"], File.ReadAllLines(Path.Combine(extracted, "conffiles")));
            var postinst = File.ReadAllText(Path.Combine(extracted, "postinst"));
            Assert.Contains("adduser --system", postinst, StringComparison.Ordinal);
            Assert.Contains("useradd --system", postinst, StringComparison.Ordinal);
            Assert.Contains("deluser --system", File.ReadAllText(Path.Combine(extracted, "postrm")), StringComparison.Ordinal);
            Assert.Contains("systemctl stop quintet-manager.service", File.ReadAllText(Path.Combine(extracted, "prerm")), StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(extracted, recursive: true);
        }

        var contents = await Command.CheckedAsync("dpkg-deb", ["--contents", fixture.Package], CommandTimeout);
        var files = contents.Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => l.Split(' ', StringSplitOptions.RemoveEmptyEntries)).ToList();
        string? Entry(string path) => files.Where(f => f[^1] == "." + path).Select(f => f[0] + " " + f[1]).FirstOrDefault();
        Assert.Equal("-rwxr-xr-x root/root", Entry("/usr/bin/quintet"));
        Assert.Equal("-rw-r----- root/root", Entry("/etc/quintet/manager.env"));
        Assert.Equal("-rw-r--r-- root/root", Entry(UnitPath));
        Assert.NotNull(Entry("/usr/lib/quintet/manager/Quintet.Manager.dll"));
        Assert.NotNull(Entry("/usr/lib/quintet/manager/appsettings.json"));
        Assert.NotNull(Entry("/usr/lib/quintet/manager/Microsoft.Extensions.Hosting.Systemd.dll"));
        Assert.NotNull(Entry("/usr/lib/quintet/cli/Quintet.Cli.dll"));
        Assert.NotNull(Entry("/usr/lib/quintet/proxy/quintet-proxy.dll"));
        Assert.Equal("-rw-r----- root/root", Entry("/etc/quintet/proxy.env"));
        Assert.Equal("-rw-r--r-- root/root", Entry(ProxyUnitPath));
        Assert.Contains(files, f => f[^1].StartsWith("./usr/lib/quintet/manager/runtimes/linux-x64/", StringComparison.Ordinal));
        Assert.DoesNotContain(files, f => f[^1].StartsWith("./usr/lib/quintet/manager/runtimes/win", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Units_pass_systemd_analyze_verify_and_keep_the_restart_policy()
    {
        var extracted = Directory.CreateTempSubdirectory("quintet-deb-files-").FullName;
        try
        {
            await Command.CheckedAsync("dpkg-deb", ["--extract", fixture.Package, extracted], CommandTimeout);
            var unitPath = extracted + UnitPath;
            var unit = UnitFile.Read(unitPath);
            Assert.Equal("notify", unit.Get("Type"));
            Assert.Equal("quintet", unit.Get("User"));
            Assert.Equal("quintet", unit.Get("StateDirectory"));
            Assert.Contains(new KeyValuePair<string, string>("Quintet__Manager__DataDirectory", StateDirectory), unit.Environment());
            Assert.Equal("-/etc/quintet/manager.env", unit.Get("EnvironmentFile"));
            Assert.Equal("on-failure", unit.Get("Restart"));
            Assert.Equal("2 3", unit.Get("RestartPreventExitStatus"));
            Assert.Equal("yes", unit.Get("NoNewPrivileges"));
            Assert.Equal("strict", unit.Get("ProtectSystem"));
            Assert.Equal(StateDirectory, unit.Get("ReadWritePaths"));
            Assert.Equal("yes", unit.Get("PrivateTmp"));
            Assert.Null(unit.Get("MemoryDenyWriteExecute"));

            // Without systemd as PID 1, verify still loads the unit: every key known, the command executable (the
            // package's ExecStart names /usr/bin/dotnet, which this machine has).
            if (!File.Exists("/usr/bin/systemd-analyze"))
            {
                Assert.Fail("systemd-analyze is missing: install Debian's systemd package to verify the unit.");
            }

            var (code, stdout, stderr) = await Command.RunAsync("systemd-analyze", ["verify", unitPath], CommandTimeout);
            output.WriteLine($"systemd-analyze verify: exit code {code}\n{stdout}{stderr}");
            Assert.Equal(0, code);
            Assert.True(string.IsNullOrWhiteSpace(stderr), $"systemd-analyze verify complained:\n{stderr}");

            // The local proxy's unit: loopback and its socket under /run, restarted unless its settings are wrong.
            var proxyUnitPath = extracted + ProxyUnitPath;
            var proxyUnit = UnitFile.Read(proxyUnitPath);
            Assert.Equal("notify", proxyUnit.Get("Type"));
            Assert.Equal("quintet", proxyUnit.Get("User"));
            Assert.Equal("-/etc/quintet/proxy.env", proxyUnit.Get("EnvironmentFile"));
            Assert.Equal("2 3", proxyUnit.Get("RestartPreventExitStatus"));
            Assert.Contains(new KeyValuePair<string, string>("Quintet__Proxy__Listen", "127.0.0.1:7071"), proxyUnit.Environment());
            var (proxyCode, proxyOut, proxyErr) = await Command.RunAsync("systemd-analyze", ["verify", proxyUnitPath], CommandTimeout);
            output.WriteLine($"systemd-analyze verify (proxy): exit code {proxyCode}\n{proxyOut}{proxyErr}");
            Assert.Equal(0, proxyCode);
            Assert.True(string.IsNullOrWhiteSpace(proxyErr), $"systemd-analyze verify complained of the proxy's unit:\n{proxyErr}");
        }
        finally
        {
            Directory.Delete(extracted, recursive: true);
        }
    }

    [Fact]
    public async Task Installed_manager_runs_as_its_unit_would_notifies_serves_joins_a_cluster_keeps_its_data_in_var_lib_and_purges_clean()
    {
        if (Environment.UserName != "root")
        {
            Assert.Fail($"Installing the package needs root (dpkg -i, a system user); this test runs as '{Environment.UserName}'.");
        }

        var watch = Stopwatch.StartNew();
        var work = Directory.CreateTempSubdirectory("quintet-deb-run-");
        // The manager's user must reach the notification socket and the launcher in here.
        work.UnixFileMode = UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute
            | UnixFileMode.GroupRead | UnixFileMode.GroupExecute | UnixFileMode.OtherRead | UnixFileMode.OtherExecute;
        Process? launcher = null;
        int managerPid = 0;
        await using var cluster = await LocalCluster.StartAsync(new LocalClusterOptions { InitialManagers = 1, Timeout = TimeSpan.FromSeconds(90) });
        try
        {
            await InstallAsync();
            var unit = UnitFile.Read(UnitPath);
            Assert.Equal("quintet", unit.Required("User"));
            var stateDirectory = "/var/lib/" + unit.Required("StateDirectory");
            Assert.Equal(StateDirectory, stateDirectory);

            // The site's settings, where an administrator puts them: join the testing host's manager on loopback.
            var clusterPort = FreePort();
            var grpcPort = FreePort();
            var environmentFile = unit.Required("EnvironmentFile").TrimStart('-');
            File.AppendAllLines(environmentFile,
            [
                $"Quintet__Cluster__Name={cluster.Options.ClusterName}",
                "Quintet__Cluster__Host=127.0.0.1",
                $"Quintet__Cluster__Port={clusterPort}",
                $"Quintet__Cluster__Seeds__0=127.0.0.1:{cluster.Managers[0].ClusterPort}",
                $"Quintet__Manager__GrpcPort={grpcPort}",
                "Quintet__Manager__NodeName=installed",
            ]);

            using var notifications = new NotifySocket(Path.Combine(work.FullName, "notify"));
            (launcher, managerPid) = await StartAsServiceAsync(unit, environmentFile, stateDirectory, notifications.Path, work.FullName);
            output.WriteLine($"installed manager: process {managerPid}, started after {watch.Elapsed.TotalSeconds:F0} s");
            Assert.Equal("quintet", await OwnerOfProcessAsync(managerPid));

            await notifications.WaitForAsync("READY=1", TimeSpan.FromSeconds(90), () => Log(work.FullName));
            output.WriteLine($"READY=1 after {watch.Elapsed.TotalSeconds:F0} s");

            // One cluster of two: seen by the testing host's manager, and by the installed CLI against the installed manager.
            await cluster.WaitUntilAsync(
                [cluster.Managers[0]],
                view => view.Managers.Count == 2 && view.Managers.All(m => m.State == ManagerState.Up && m.Reachable),
                "the installed manager Up beside the testing host's");
            var (cliCode, shown, cliError) = await Command.RunAsync("/usr/bin/quintet", ["cluster", "show", "--endpoint", $"http://127.0.0.1:{grpcPort}"], CommandTimeout);
            output.WriteLine(shown + cliError);
            Assert.Equal(0, cliCode);
            Assert.Contains("installed", shown, StringComparison.Ordinal);
            Assert.Contains(cluster.Managers[0].Name, shown, StringComparison.Ordinal);
            Assert.Contains("2 of 2 Up", shown, StringComparison.Ordinal);

            // Its data in the state folder, owned by its user, private to it (UMask=0027), none in the temp folder.
            var data = Directory.GetFileSystemEntries(stateDirectory).Select(Path.GetFileName).ToList();
            output.WriteLine($"{stateDirectory}: {string.Join(", ", data)}");
            Assert.Contains("replica.log", data);
            Assert.Contains("roles", data);
            Assert.Equal("quintet quintet", (await Command.CheckedAsync("stat", ["-c", "%U %G", Path.Combine(stateDirectory, "replica.log")], CommandTimeout)).Trim());
            Assert.Equal(UnixFileMode.None, File.GetUnixFileMode(Path.Combine(stateDirectory, "replica.log")) & (UnixFileMode.OtherRead | UnixFileMode.OtherWrite));
            Assert.False(Directory.Exists(Path.Combine(Path.GetTempPath(), "quintet", "installed")), "The manager kept data under the temp folder.");

            // Stopped as systemd stops it: SIGTERM to the main process; it says it stops, leaves and exits 0.
            await Command.CheckedAsync("kill", ["-TERM", managerPid.ToString(System.Globalization.CultureInfo.InvariantCulture)], CommandTimeout);
            await notifications.WaitForAsync("STOPPING=1", TimeSpan.FromSeconds(30), () => Log(work.FullName));
            using (var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30)))
            {
                await launcher.WaitForExitAsync(bound.Token);
            }

            Assert.Equal(0, launcher.ExitCode);
            managerPid = 0;
        }
        catch
        {
            output.WriteLine(Log(work.FullName));
            throw;
        }
        finally
        {
            if (managerPid != 0)
            {
                await Command.RunAsync("kill", ["-KILL", managerPid.ToString(System.Globalization.CultureInfo.InvariantCulture)], CommandTimeout);
            }

            launcher?.Dispose();
            var purged = await Command.RunAsync("dpkg", ["--purge", "quintet"], CommandTimeout);
            output.WriteLine($"dpkg --purge: exit code {purged.ExitCode}\n{purged.Output}{purged.Error}");
            work.Delete(recursive: true);
        }

        Assert.NotEqual(0, (await Command.RunAsync("getent", ["passwd", "quintet"], CommandTimeout)).ExitCode);
        Assert.NotEqual(0, (await Command.RunAsync("getent", ["group", "quintet"], CommandTimeout)).ExitCode);
        foreach (var path in new[] { "/usr/lib/quintet", StateDirectory, "/etc/quintet", "/usr/bin/quintet", UnitPath })
        {
            Assert.False(Path.Exists(path), $"{path} is still there after dpkg --purge.");
        }

        output.WriteLine($"install, run, join, stop and purge: {watch.Elapsed.TotalSeconds:F0} s");
    }

    private async Task InstallAsync()
    {
        var (status, installed, _) = await Command.RunAsync("dpkg-query", ["-W", "-f=${Status}", "quintet"], CommandTimeout);
        if (status == 0 && installed.Contains("installed", StringComparison.Ordinal))
        {
            // Left by an earlier run that was stopped before its clean-up.
            output.WriteLine("purging a quintet package left installed");
            await Command.CheckedAsync("dpkg", ["--purge", "quintet"], CommandTimeout);
        }

        // The package depends on Microsoft's (or Ubuntu's) runtime package; a machine whose .NET was installed another
        // way has the runtime but not the package, and dpkg is told so, once the runtime is known to be there.
        var (runtimePackage, runtimeStatus, _) = await Command.RunAsync("dpkg-query", ["-W", "-f=${Status}", "aspnetcore-runtime-10.0"], CommandTimeout);
        List<string> install = ["-i"];
        if (runtimePackage != 0 || !runtimeStatus.Contains("install ok installed", StringComparison.Ordinal))
        {
            var runtimes = await Command.CheckedAsync("/usr/bin/dotnet", ["--list-runtimes"], CommandTimeout);
            Assert.True(runtimes.Contains("Microsoft.AspNetCore.App 10.", StringComparison.Ordinal), $"/usr/bin/dotnet has no ASP.NET Core 10 runtime:\n{runtimes}");
            install.Add("--force-depends");
        }

        var result = await Command.RunAsync("dpkg", [.. install, fixture.Package], CommandTimeout);
        output.WriteLine($"dpkg {string.Join(' ', install)}: exit code {result.ExitCode}\n{result.Output}{result.Error}");
        Assert.Equal(0, result.ExitCode);
        Assert.Equal(0, (await Command.RunAsync("getent", ["passwd", "quintet"], CommandTimeout)).ExitCode);
        Assert.Equal("quintet quintet 750", (await Command.CheckedAsync("stat", ["-c", "%U %G %a", StateDirectory], CommandTimeout)).Trim());
    }

    /// <summary>
    /// Starts the unit's command the way systemd would, without systemd: as its User and Group without new privileges,
    /// in its WorkingDirectory and UMask, with systemd's environment for a service (its Environment= lines, then the
    /// EnvironmentFile, STATE_DIRECTORY and NOTIFY_SOCKET), under a parent named systemd, which is how .NET's systemd
    /// integration recognises a service. Returns the launcher and the manager's process id.
    /// </summary>
    private static async Task<(Process Launcher, int ManagerPid)> StartAsServiceAsync(
        UnitFile unit, string environmentFile, string stateDirectory, string notifySocket, string work)
    {
        var launcherPath = Path.Combine(work, "systemd");
        await File.WriteAllTextAsync(launcherPath, """
            #!/bin/sh
            # Stands in for systemd: runs the service's command as its child, prints its process id, waits for it.
            umask "$1"
            log=$2
            shift 2
            "$@" >"$log" 2>&1 &
            echo $!
            wait $!
            """.Replace("\r", string.Empty, StringComparison.Ordinal));
        File.SetUnixFileMode(launcherPath, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute | UnixFileMode.GroupRead | UnixFileMode.GroupExecute | UnixFileMode.OtherRead | UnixFileMode.OtherExecute);

        var user = unit.Required("User");
        var group = unit.Get("Group") ?? user;
        var info = new ProcessStartInfo(launcherPath)
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
            WorkingDirectory = unit.Get("WorkingDirectory") ?? "/",
        };
        info.Environment.Clear();
        info.Environment["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        info.Environment["HOME"] = stateDirectory;
        info.Environment["USER"] = user;
        info.Environment["LOGNAME"] = user;
        info.Environment["SHELL"] = "/usr/sbin/nologin";
        info.Environment["STATE_DIRECTORY"] = stateDirectory;
        info.Environment["NOTIFY_SOCKET"] = notifySocket;
        foreach (var (name, value) in unit.Environment().Concat(UnitFile.ReadEnvironmentFile(environmentFile)))
        {
            info.Environment[name] = value;
        }

        info.ArgumentList.Add(unit.Get("UMask") ?? "0022");
        info.ArgumentList.Add(Path.Combine(work, "manager.log"));
        info.ArgumentList.Add("setpriv");
        info.ArgumentList.Add($"--reuid={user}");
        info.ArgumentList.Add($"--regid={group}");
        info.ArgumentList.Add("--init-groups");
        if (unit.Get("NoNewPrivileges") == "yes")
        {
            info.ArgumentList.Add("--no-new-privs");
        }

        info.ArgumentList.Add("--");
        foreach (var part in unit.Required("ExecStart").Split(' ', StringSplitOptions.RemoveEmptyEntries))
        {
            info.ArgumentList.Add(part);
        }

        var launcher = Process.Start(info) ?? throw new InvalidOperationException("Could not start the launcher.");
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var pid = await launcher.StandardOutput.ReadLineAsync(bound.Token);
        return (launcher, int.Parse(pid ?? throw new InvalidOperationException("The launcher printed no process id."), System.Globalization.CultureInfo.InvariantCulture));
    }

    private static async Task<string> OwnerOfProcessAsync(int pid) =>
        (await Command.CheckedAsync("ps", ["-o", "user=", "-p", pid.ToString(System.Globalization.CultureInfo.InvariantCulture)], CommandTimeout)).Trim();

    private static string Log(string work)
    {
        var path = Path.Combine(work, "manager.log");
        return File.Exists(path) ? "installed manager's log:\n" + string.Join('\n', File.ReadLines(path).TakeLast(60)) : "no log";
    }

    private static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    /// <summary>A datagram socket where a service sends its sd_notify messages, as systemd's NOTIFY_SOCKET.</summary>
    private sealed class NotifySocket : IDisposable
    {
        private readonly Socket _socket = new(AddressFamily.Unix, SocketType.Dgram, ProtocolType.Unspecified);
        private readonly List<string> _received = [];
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _receiving;

        public NotifySocket(string path)
        {
            Path = path;
            _socket.Bind(new UnixDomainSocketEndPoint(path));
            // The service runs as another user.
            File.SetUnixFileMode(path, (UnixFileMode)0x1B6);
            _receiving = ReceiveAsync();
        }

        public string Path { get; }

        public async Task WaitForAsync(string message, TimeSpan timeout, Func<string> context)
        {
            try
            {
                await Eventually.TrueAsync(
                    () =>
                    {
                        lock (_received)
                        {
                            return _received.Any(r => r.Split('\n').Contains(message));
                        }
                    },
                    timeout,
                    $"'{message}' on the notification socket");
            }
            catch (TimeoutException e)
            {
                throw new TimeoutException($"{e.Message} Received: [{Received()}].\n{context()}", e);
            }
        }

        public void Dispose()
        {
            _stop.Cancel();
            _socket.Dispose();
            try
            {
                _receiving.Wait(TimeSpan.FromSeconds(5));
            }
            catch (AggregateException)
            {
                // Closing the socket ends the receive loop with an error, as it should.
            }

            _stop.Dispose();
        }

        private string Received()
        {
            lock (_received)
            {
                return string.Join(" | ", _received);
            }
        }

        private async Task ReceiveAsync()
        {
            var buffer = new byte[4096];
            while (!_stop.IsCancellationRequested)
            {
                int count;
                try
                {
                    count = await _socket.ReceiveAsync(buffer, SocketFlags.None, _stop.Token);
                }
                catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
                {
                    return;
                }

                lock (_received)
                {
                    _received.Add(Encoding.UTF8.GetString(buffer, 0, count).Trim());
                }
            }
        }
    }
}
