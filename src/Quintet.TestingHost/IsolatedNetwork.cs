using System.Globalization;

namespace Quintet.TestingHost;

/// <summary>
/// A network of its own for a <see cref="LocalCluster"/> (Linux, as root, with iproute2 and nftables): each manager
/// runs in a network namespace of its own, with its own address, all joined by a bridge that the test also reaches;
/// <see cref="PartitionAsync"/> cuts the managers into sides with nftables rules inside their namespaces, so that a
/// partition is real TCP silence between processes and touches nothing outside them. Disposing deletes it all.
/// </summary>
public sealed class IsolatedNetwork : IAsyncDisposable
{
    private const string PartitionTable = "quintet_partition";

    // Subnets of networks this process has made and not yet deleted: clusters of tests that run side by side must not
    // share one, or a bridge would route a manager's packets into another test's cluster.
    private static readonly HashSet<int> SubnetsInUse = [];
    private readonly string _suffix;
    private readonly int _subnet;
    private readonly int _managers;

    private IsolatedNetwork(string suffix, int subnet, int managers)
    {
        _suffix = suffix;
        _subnet = subnet;
        _managers = managers;
    }

    /// <summary>The bridge's name; the namespaces are named after it.</summary>
    public string Name => "qb" + _suffix;

    /// <summary>The command prefix that runs a program in the namespace of the manager with this index (the program
    /// keeps its process id).</summary>
    public IReadOnlyList<string> CommandPrefix(int index) => ["ip", "netns", "exec", NamespaceOf(index)];

    /// <summary>The address of the manager with this index (from 1).</summary>
    public string AddressOf(int index)
    {
        if (index < 1 || index > _managers)
        {
            throw new ArgumentOutOfRangeException(nameof(index), index, $"This network was made for managers 1 to {_managers}.");
        }

        return $"10.231.{_subnet}.{index + 1}";
    }

    /// <summary>The bridge's own address, by which this process (outside every namespace) is reached from them.</summary>
    public string HostAddress => $"10.231.{_subnet}.1";

    private string NamespaceOf(int index) => $"quintet-{_suffix}-{index}";

    /// <summary>Why an isolated network cannot be made here, or null when it can (nftables is installed on demand).</summary>
    public static string? WhyUnavailable()
    {
        if (!OperatingSystem.IsLinux())
        {
            return "network namespaces need Linux";
        }

        if (Environment.UserName != "root")
        {
            return $"network namespaces and nftables need root; this runs as {Environment.UserName}";
        }

        return FindOnPath("ip") is null ? "iproute2's ip command is missing (apt-get install iproute2)" : null;
    }

    /// <summary>Creates a namespace for each of <paramref name="managers"/> managers, installing nftables if missing.</summary>
    public static async Task<IsolatedNetwork> CreateAsync(int managers, CancellationToken cancellationToken = default)
    {
        if (WhyUnavailable() is { } reason)
        {
            throw new InvalidOperationException($"Cannot make an isolated network: {reason}.");
        }

        ArgumentOutOfRangeException.ThrowIfLessThan(managers, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(managers, 99);
        await EnsureNftablesAsync(cancellationToken);
        var network = new IsolatedNetwork(Guid.NewGuid().ToString("N")[..6], await ReserveSubnetAsync(cancellationToken), managers);
        try
        {
            await RunAsync(cancellationToken, "ip", "link", "add", "name", network.Name, "type", "bridge");
            await RunAsync(cancellationToken, "ip", "addr", "add", network.HostAddress + "/24", "dev", network.Name);
            await RunAsync(cancellationToken, "ip", "link", "set", network.Name, "up");
            for (var i = 1; i <= managers; i++)
            {
                var ns = network.NamespaceOf(i);
                var outside = $"qv{network._suffix}{i}o";
                var inside = $"qv{network._suffix}{i}i";
                await RunAsync(cancellationToken, "ip", "netns", "add", ns);
                await RunAsync(cancellationToken, "ip", "link", "add", outside, "type", "veth", "peer", "name", inside);
                await RunAsync(cancellationToken, "ip", "link", "set", inside, "netns", ns);
                await RunAsync(cancellationToken, "ip", "link", "set", outside, "master", network.Name);
                await RunAsync(cancellationToken, "ip", "link", "set", outside, "up");
                await RunAsync(cancellationToken, "ip", "netns", "exec", ns, "ip", "addr", "add", network.AddressOf(i) + "/24", "dev", inside);
                await RunAsync(cancellationToken, "ip", "netns", "exec", ns, "ip", "link", "set", inside, "up");
                await RunAsync(cancellationToken, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
            }
        }
        catch
        {
            await network.DisposeAsync();
            throw;
        }

        return network;
    }

    /// <summary>
    /// Drops every packet between managers on different sides (each side a list of manager indexes): each manager's
    /// namespace refuses input from the other sides' addresses.
    /// </summary>
    public async Task PartitionAsync(IReadOnlyList<IReadOnlyList<int>> sides, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(sides);
        await HealAsync(cancellationToken);
        foreach (var side in sides)
        {
            var others = sides.Where(s => s != side).SelectMany(s => s).Select(AddressOf).ToList();
            if (others.Count == 0)
            {
                continue;
            }

            var script = $"table inet {PartitionTable} {{\n chain input {{\n  type filter hook input priority 0; policy accept;\n  ip saddr {{ {string.Join(", ", others)} }} drop\n }}\n}}\n";
            var file = Path.Combine(Path.GetTempPath(), $"{Name}-partition-{Guid.NewGuid():N}.nft");
            await File.WriteAllTextAsync(file, script, cancellationToken);
            try
            {
                foreach (var index in side)
                {
                    await RunAsync(cancellationToken, "ip", "netns", "exec", NamespaceOf(index), "nft", "-f", file);
                }
            }
            finally
            {
                File.Delete(file);
            }
        }
    }

    /// <summary>Removes the partition: every manager reaches every other again.</summary>
    public async Task HealAsync(CancellationToken cancellationToken = default)
    {
        for (var i = 1; i <= _managers; i++)
        {
            var (code, _) = await TryRunAsync(cancellationToken, "ip", "netns", "exec", NamespaceOf(i), "nft", "list", "table", "inet", PartitionTable);
            if (code == 0)
            {
                await RunAsync(cancellationToken, "ip", "netns", "exec", NamespaceOf(i), "nft", "delete", "table", "inet", PartitionTable);
            }
        }
    }

    /// <summary>Deletes the namespaces (with their veth pairs and rules) and the bridge. Stop the managers first.</summary>
    public async ValueTask DisposeAsync()
    {
        using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        for (var i = 1; i <= _managers; i++)
        {
            await TryRunAsync(bounded.Token, "ip", "netns", "del", NamespaceOf(i));
        }

        await TryRunAsync(bounded.Token, "ip", "link", "del", Name);
        lock (SubnetsInUse)
        {
            SubnetsInUse.Remove(_subnet);
        }
    }

    /// <summary>
    /// A subnet 10.231.N.0/24 that no network of this process uses and no interface of the host has an address in
    /// (another test run on the same host may have made one).
    /// </summary>
    private static async Task<int> ReserveSubnetAsync(CancellationToken cancellationToken)
    {
        var (_, addresses) = await TryRunAsync(cancellationToken, "ip", "-o", "-4", "addr", "show");
        lock (SubnetsInUse)
        {
            var free = Enumerable.Range(1, 249)
                .Where(n => !SubnetsInUse.Contains(n) && !addresses.Contains($" 10.231.{n}.", StringComparison.Ordinal))
                .ToList();
            if (free.Count == 0)
            {
                throw new InvalidOperationException("Every subnet 10.231.1.0/24 to 10.231.249.0/24 is in use on this host; delete stale test bridges (ip link show type bridge).");
            }

            var subnet = free[Random.Shared.Next(free.Count)];
            SubnetsInUse.Add(subnet);
            return subnet;
        }
    }

    private static Task EnsureNftablesAsync(CancellationToken cancellationToken) =>
        FindOnPath("nft") is not null ? Task.CompletedTask : DebianPackages.EnsureAsync(["nftables"], cancellationToken);

    private static async Task RunAsync(CancellationToken cancellationToken, params string[] command)
    {
        var (code, output) = await TryRunAsync(cancellationToken, command);
        if (code != 0)
        {
            throw new InvalidOperationException($"'{string.Join(' ', command)}' failed with exit code {code}: {output.Trim()}");
        }
    }

    private static Task<(int Code, string Output)> TryRunAsync(CancellationToken cancellationToken, params string[] command) =>
        DebianPackages.RunAsync(cancellationToken, command);

    private static string? FindOnPath(string command) =>
        (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(':')
            .Concat(["/usr/sbin", "/sbin"])
            .Select(dir => Path.Combine(dir, command))
            .FirstOrDefault(File.Exists);

    /// <inheritdoc />
    public override string ToString() => string.Create(CultureInfo.InvariantCulture, $"bridge {Name}, {_managers} namespaces on 10.231.{_subnet}.0/24");
}
