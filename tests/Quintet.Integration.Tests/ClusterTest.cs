using System.Text;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>Runs a test body against a fresh local cluster, printing the managers' logs if it fails.</summary>
internal static class ClusterTest
{
    public static LocalClusterOptions Options(int managers = 3) => new()
    {
        InitialManagers = managers,
        LogDirectory = Path.Combine(Path.GetTempPath(), "quintet-tests", $"{DateTime.UtcNow:yyyyMMdd-HHmmss}-{Guid.NewGuid():N}"[..32]),
    };

    public static async Task RunAsync(ITestOutputHelper output, LocalClusterOptions options, Func<LocalCluster, Task> body)
    {
        LocalCluster? cluster = null;
        try
        {
            cluster = await LocalCluster.StartAsync(options, new OutputProgress(output));
            await body(cluster);
        }
        catch
        {
            output.WriteLine(DescribeLogs(options.LogDirectory!));
            throw;
        }
        finally
        {
            if (cluster is not null)
            {
                await cluster.DisposeAsync();
            }
        }
    }

    /// <summary>Waits until each manager lists exactly <paramref name="names"/> as its deployed packages (60 s at most).</summary>
    public static async Task WaitForPackagesAsync(IReadOnlyCollection<ManagerProcess> managers, params string[] names)
    {
        var expected = $"[{string.Join(", ", names.Order())}]";
        await Quintet.Tests.Eventually.ValueAsync(
            () => Task.WhenAll(managers.Select(ListedPackagesAsync)),
            lists => lists.All(l => l.EndsWith($": {expected}", StringComparison.Ordinal)),
            TimeSpan.FromSeconds(60),
            $"the managers all to list {expected} as their packages (what each listed)");
    }

    /// <summary>
    /// Waits until each manager lists <paramref name="name"/> among its deployed packages (60 s at most), whatever else
    /// a cluster shared by several tests has deployed.
    /// </summary>
    public static Task WaitForPackageAmongOthersAsync(IReadOnlyCollection<ManagerProcess> managers, string name) =>
        Quintet.Tests.Eventually.ValueAsync(
            () => Task.WhenAll(managers.Select(ListedPackagesAsync)),
            lists => lists.All(l => l.Contains('[') && l[(l.IndexOf('[') + 1)..^1].Split(", ").Contains(name, StringComparer.Ordinal)),
            TimeSpan.FromSeconds(60),
            $"the managers all to list {name} among their packages (what each listed)");

    // A manager that does not answer in time yet (busy loading, or the machine busy) is waited for like one that lists
    // other packages: what the wait is about is what each manager lists in the end.
    private static async Task<string> ListedPackagesAsync(ManagerProcess manager)
    {
        try
        {
            var listed = await new Quintet.Protocol.Admin.ComponentAdmin.ComponentAdminClient(manager.Channel)
                .ListPackagesAsync(new Quintet.Protocol.Admin.ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(10));
            return $"{manager.Name}: [{string.Join(", ", listed.Packages.Select(p => p.Name).Order())}]";
        }
        catch (Grpc.Core.RpcException e) when (e.StatusCode is Grpc.Core.StatusCode.DeadlineExceeded or Grpc.Core.StatusCode.Unavailable)
        {
            return $"{manager.Name}: {e.StatusCode} ({e.Status.Detail})";
        }
    }

    /// <summary>Retries <paramref name="attempt"/> every 250 ms until it passes or 40 s have gone by (then it throws, its last failure inside).</summary>
    public static Task<T> Eventually<T>(Func<Task<T>> attempt) =>
        Quintet.Tests.Eventually.SucceedsAsync(attempt, TimeSpan.FromSeconds(40), "the attempt to succeed", interval: TimeSpan.FromMilliseconds(250));

    /// <summary>The tail of every log in the folder: also covers managers of a cluster that failed to start.</summary>
    public static string DescribeLogs(string directory, int lines = 60)
    {
        if (!Directory.Exists(directory))
        {
            return $"(no logs: {directory} does not exist)";
        }

        var text = new StringBuilder();
        foreach (var file in Directory.GetFiles(directory, "*.log").Order(StringComparer.Ordinal))
        {
            text.Append("===== ").Append(file).AppendLine(" =====");
            using var stream = new FileStream(file, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
            using var reader = new StreamReader(stream);
            text.AppendLine(string.Join('\n', reader.ReadToEnd().Split('\n').TakeLast(lines)));
        }

        return text.ToString();
    }

    private sealed class OutputProgress(ITestOutputHelper output) : IProgress<string>
    {
        public void Report(string value) => output.WriteLine($"{DateTime.UtcNow:HH:mm:ss.fff} {value}");
    }
}
