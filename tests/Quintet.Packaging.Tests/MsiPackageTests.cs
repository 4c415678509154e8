namespace Quintet.Packaging.Tests;

/// <summary>The Windows installer built by installer/windows/build-msi.sh, read back with msitools' msiinfo.</summary>
[Collection(PackageBuilds.Name)]
public sealed class MsiPackageTests(MsiPackageFixture fixture, ITestOutputHelper output) : IClassFixture<MsiPackageFixture>
{
    private static readonly TimeSpan CommandTimeout = TimeSpan.FromMinutes(1);

    [Fact]
    public async Task Installer_registers_the_manager_as_an_automatic_service_with_recovery_the_proxy_as_a_manual_one_and_holds_every_program()
    {
        output.WriteLine($"built {fixture.Package} ({new FileInfo(fixture.Package).Length / 1024} KiB) in {fixture.BuildTime.TotalSeconds:F0} s");
        var tables = (await Command.CheckedAsync("msiinfo", ["tables", fixture.Package], CommandTimeout)).Split('\n', StringSplitOptions.TrimEntries);
        foreach (var table in new[] { "ServiceInstall", "ServiceControl", "File", "Component", "Directory", "CustomAction", "InstallExecuteSequence", "Media" })
        {
            Assert.Contains(table, tables);
        }

        // The service: named QuintetManager, its own process (16), started automatically (2), its data folder given.
        var services = await RowsAsync("ServiceInstall");
        var service = Assert.Single(services, s => s["Name"] == "QuintetManager");
        output.WriteLine("ServiceInstall: " + string.Join(" | ", service.Values));
        Assert.Equal("QuintetManager", service["Name"]);
        Assert.Equal("16", service["ServiceType"]);
        Assert.Equal("2", service["StartType"]);
        Assert.Contains("--Quintet:Manager:DataDirectory=", service["Arguments"], StringComparison.Ordinal);
        Assert.Contains("[CommonAppDataFolder]", service["Arguments"], StringComparison.Ordinal);

        // The service runs its component's key file: the manager's executable.
        var component = Assert.Single(await RowsAsync("Component"), c => c["Component"] == service["Component_"]);
        var executable = Assert.Single(await RowsAsync("File"), f => f["File"] == component["KeyPath"]);
        Assert.EndsWith("Quintet.Manager.exe", executable["FileName"], StringComparison.Ordinal);
        Assert.Equal("MANAGERDIR", component["Directory_"]);

        // Started on install (1), stopped on install and uninstall (2 + 32), deleted on uninstall (128), waited for.
        var controls = await RowsAsync("ServiceControl");
        var control = Assert.Single(controls, c => c["Name"] == "QuintetManager");
        Assert.Equal("163", control["Event"]);
        Assert.Equal("1", control["Wait"]);
        Assert.Equal(service["Component_"], control["Component_"]);

        // Recovery through sc.exe, deferred and elevated, after the service is installed.
        var actions = await RowsAsync("CustomAction");
        Assert.Contains(actions, a => a["Target"].StartsWith("failure QuintetManager ", StringComparison.Ordinal) && a["Target"].Contains("restart/", StringComparison.Ordinal));
        Assert.Contains(actions, a => a["Target"] == "failureflag QuintetManager 1");
        Assert.Contains(actions, a => a["Target"] == "[SystemFolder]sc.exe");
        var sequence = await RowsAsync("InstallExecuteSequence");
        int Step(string action) => int.Parse(Assert.Single(sequence, s => s["Action"] == action)["Sequence"], System.Globalization.CultureInfo.InvariantCulture);
        Assert.True(Step("ConfigureServiceRecovery") > Step("InstallServices"));
        // The path of sc.exe must be set before the deferred actions that run it are scheduled.
        Assert.True(Step("SetServiceControlPath") < Step("InstallServices"));
        Assert.True(Step("SetServiceControlPath") > Step("InstallInitialize"));

        // The local proxy: the service QuintetProxy, its own process, started by hand (3) once configured, never started
        // by the installer, stopped on install and uninstall (2 + 32) and deleted on uninstall (128).
        var proxy = Assert.Single(services, s => s["Name"] == "QuintetProxy");
        Assert.Equal("16", proxy["ServiceType"]);
        Assert.Equal("3", proxy["StartType"]);
        var proxyComponent = Assert.Single(await RowsAsync("Component"), c => c["Component"] == proxy["Component_"]);
        Assert.EndsWith("quintet-proxy.exe", Assert.Single(await RowsAsync("File"), f => f["File"] == proxyComponent["KeyPath"])["FileName"], StringComparison.Ordinal);
        Assert.Equal("PROXYDIR", proxyComponent["Directory_"]);
        Assert.Equal("162", Assert.Single(controls, c => c["Name"] == "QuintetProxy")["Event"]);
        Assert.Equal(2, services.Count);

        // The three programs, with their libraries and settings.
        var files = (await RowsAsync("File")).Select(f => f["FileName"].Split('|')[^1]).ToHashSet(StringComparer.Ordinal);
        foreach (var file in new[] { "Quintet.Manager.exe", "Quintet.Manager.dll", "appsettings.json", "Microsoft.Extensions.Hosting.WindowsServices.dll", "Quintet.Cli.exe", "Quintet.Cli.dll", "quintet-proxy.exe", "quintet-proxy.dll" })
        {
            Assert.Contains(file, files);
        }

        Assert.True(files.Count > 60, $"Only {files.Count} files in the installer.");
    }

    [Fact]
    public async Task Installer_launchers_are_windows_executables_that_start_their_programs()
    {
        var extracted = Directory.CreateTempSubdirectory("quintet-msi-files-").FullName;
        try
        {
            await Command.CheckedAsync("msiextract", ["-C", extracted, fixture.Package], CommandTimeout);
            foreach (var (folder, program) in new[] { ("Manager", "Quintet.Manager"), ("Cli", "Quintet.Cli"), ("Proxy", "quintet-proxy") })
            {
                var launcher = File.ReadAllBytes(Path.Combine(extracted, "Quintet", folder, program + ".exe"));
                Assert.True(File.Exists(Path.Combine(extracted, "Quintet", folder, program + ".dll")), $"No {program}.dll beside its launcher.");
                // A PE image (MZ, then PE\0\0 at the offset at 0x3C) for x64 (machine 0x8664)...
                Assert.Equal("MZ"u8.ToArray(), launcher[..2]);
                var header = BitConverter.ToInt32(launcher, 0x3C);
                Assert.Equal("PE\0\0"u8.ToArray(), launcher[header..(header + 4)]);
                Assert.Equal(0x8664, BitConverter.ToUInt16(launcher, header + 4));
                // ...whose placeholder the SDK replaced with the program it starts.
                Assert.True(launcher.AsSpan().IndexOf(System.Text.Encoding.UTF8.GetBytes(program + ".dll\0")) >= 0, $"{program}.exe does not name {program}.dll.");
                Assert.True(launcher.AsSpan().IndexOf("c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2"u8) < 0, $"{program}.exe still holds the apphost's placeholder.");
            }
        }
        finally
        {
            Directory.Delete(extracted, recursive: true);
        }
    }

    /// <summary>A table's rows by column name, from msiinfo export (tab-separated: names, types, keys, then rows).</summary>
    private async Task<List<Dictionary<string, string>>> RowsAsync(string table)
    {
        var text = await Command.CheckedAsync("msiinfo", ["export", fixture.Package, table], CommandTimeout);
        var lines = text.Split("\r\n").SelectMany(l => l.Split('\n')).Where(l => l.Length > 0).ToList();
        var columns = lines[0].Split('\t');
        return [.. lines.Skip(3).Select(l => columns.Zip(l.Split('\t')).ToDictionary(p => p.First, p => p.Second, StringComparer.Ordinal))];
    }
}
