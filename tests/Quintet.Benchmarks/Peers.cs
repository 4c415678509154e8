using System.Diagnostics;
using System.Globalization;
using System.Net.Http.Json;
using System.Text.Json;
using StackExchange.Redis;

namespace Quintet.Benchmarks;

/// <summary>
/// A single redis-server on a loopback port, persistence off (no RDB snapshots, no append-only file): the in-memory
/// peer of the shared dictionary.
/// </summary>
internal sealed class RedisPeer : IAsyncDisposable
{
    private readonly PeerProcess _process;

    private RedisPeer(PeerProcess process, ConnectionMultiplexer connection, int port)
    {
        _process = process;
        Connection = connection;
        Port = port;
    }

    public ConnectionMultiplexer Connection { get; }

    public int ProcessId => _process.ProcessId;

    public int Port { get; }

    /// <summary>Starts a node; with <paramref name="replicaOf"/>, a replica of the node on that port.</summary>
    public static async Task<RedisPeer> StartAsync(string folder, TimeSpan timeout, int? replicaOf = null)
    {
        Directory.CreateDirectory(folder);
        var port = PeerProcess.FreePort();
        List<string> arguments =
            ["--port", port.ToString(CultureInfo.InvariantCulture), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", folder, "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning"];
        if (replicaOf is { } primary)
        {
            arguments.AddRange(["--replicaof", "127.0.0.1", primary.ToString(CultureInfo.InvariantCulture)]);
        }

        var process = PeerProcess.Start("redis", "redis-server", arguments, Path.Combine(folder, "redis.log"));
        var waited = Stopwatch.StartNew();
        while (true)
        {
            try
            {
                var connection = await ConnectionMultiplexer.ConnectAsync($"127.0.0.1:{port},abortConnect=true,connectTimeout=2000");
                await connection.GetDatabase().PingAsync();
                return new RedisPeer(process, connection, port);
            }
            catch (RedisConnectionException) when (waited.Elapsed < timeout && !process.HasExited)
            {
                await Task.Delay(200);
            }
            catch (RedisConnectionException e)
            {
                await process.DisposeAsync();
                throw new InvalidOperationException($"redis-server (pid {process.ProcessId}) did not answer on port {port} within {timeout.TotalSeconds:F0} s: {e.Message}\n{process.TailLog()}", e);
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        await Connection.DisposeAsync();
        await _process.DisposeAsync();
    }
}

/// <summary>
/// A redis-server primary with two replicas on loopback, persistence off, and a connection of its own for each writer:
/// a write is SET then <c>WAIT 1</c>, acknowledged once a replica besides the primary holds it in memory, so that two of
/// the three nodes have it: the guarantee of the in-memory shared dictionary, whose write is acknowledged once a majority
/// of its replicas hold it. Each writer needs its own connection because WAIT holds the connection it is sent on.
/// </summary>
internal sealed class RedisReplicatedPeer : IAsyncDisposable
{
    private readonly List<RedisPeer> _nodes;
    private readonly List<ConnectionMultiplexer> _writers;

    private RedisReplicatedPeer(List<RedisPeer> nodes, List<ConnectionMultiplexer> writers)
    {
        _nodes = nodes;
        _writers = writers;
    }

    public IReadOnlyList<int> ProcessIds => [.. _nodes.Select(n => n.ProcessId)];

    public string Version => _nodes[0].Connection.GetServers()[0].Version.ToString();

    public static async Task<RedisReplicatedPeer> StartAsync(string folder, int writers, TimeSpan timeout)
    {
        var nodes = new List<RedisPeer>();
        var connections = new List<ConnectionMultiplexer>();
        try
        {
            var primary = await RedisPeer.StartAsync(Path.Combine(folder, "primary"), timeout);
            nodes.Add(primary);
            for (var i = 1; i <= 2; i++)
            {
                nodes.Add(await RedisPeer.StartAsync(Path.Combine(folder, $"replica-{i}"), timeout, replicaOf: primary.Port));
            }

            await WaitForReplicasAsync(primary, 2, timeout);
            for (var i = 0; i < writers; i++)
            {
                connections.Add(await ConnectionMultiplexer.ConnectAsync($"127.0.0.1:{primary.Port},abortConnect=true,connectTimeout=2000"));
            }

            return new RedisReplicatedPeer(nodes, connections);
        }
        catch
        {
            foreach (var connection in connections)
            {
                await connection.DisposeAsync();
            }

            foreach (var node in nodes)
            {
                await node.DisposeAsync();
            }

            throw;
        }
    }

    /// <summary>
    /// SET, then WAIT for one replica, pipelined on the writer's connection (one round trip): a WAIT that times out with
    /// no replica is a failed write.
    /// </summary>
    public async Task SetAsync(int writer, string key, byte[] value)
    {
        var db = _writers[writer].GetDatabase();
        var set = db.StringSetAsync(key, value);
        var wait = db.ExecuteAsync("WAIT", 1, 5000);
        await set;
        var replicas = (long)await wait;
        if (replicas < 1)
        {
            throw new InvalidOperationException($"WAIT 1 returned {replicas}: no replica acknowledged the write within 5 s");
        }
    }

    private static async Task WaitForReplicasAsync(RedisPeer primary, int replicas, TimeSpan timeout)
    {
        // INFO is an admin command to StackExchange.Redis: asked on a connection of its own that allows it.
        await using var admin = await ConnectionMultiplexer.ConnectAsync($"127.0.0.1:{primary.Port},allowAdmin=true,abortConnect=true,connectTimeout=2000");
        var server = admin.GetServers()[0];
        var waited = Stopwatch.StartNew();
        var info = "";
        while (waited.Elapsed < timeout)
        {
            info = await server.InfoRawAsync("replication") ?? "";
            var online = info.Split('\n').Count(l => l.StartsWith("slave", StringComparison.Ordinal) && l.Contains("state=online", StringComparison.Ordinal));
            if (online >= replicas)
            {
                return;
            }

            await Task.Delay(100);
        }

        throw new InvalidOperationException($"The redis primary (port {primary.Port}) did not have {replicas} replicas online within {timeout.TotalSeconds:F0} s:\n{info}");
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var connection in _writers)
        {
            await connection.DisposeAsync();
        }

        foreach (var node in _nodes)
        {
            await node.DisposeAsync();
        }
    }
}

/// <summary>
/// A 3-member etcd cluster on loopback ports, each member with its data folder under the one given, spoken to through
/// its v3 JSON gateway (<c>/v3/kv/put</c>) with <see cref="HttpClient"/>. Puts go to the leader, the fastest way in.
/// </summary>
internal sealed class EtcdPeer : IAsyncDisposable
{
    private readonly List<PeerProcess> _members;
    private readonly HttpClient _http;

    private readonly int[] _clientPorts;

    private EtcdPeer(List<PeerProcess> members, HttpClient http, int[] clientPorts, Uri leader, string version)
    {
        _members = members;
        _http = http;
        _clientPorts = clientPorts;
        Leader = leader;
        Version = version;
    }

    public Uri Leader { get; }

    public string Version { get; }

    public IEnumerable<int> ProcessIds => _members.Select(m => m.ProcessId);

    public static async Task<EtcdPeer> StartAsync(string folder, int size, TimeSpan timeout)
    {
        var clientPorts = Enumerable.Range(0, size).Select(_ => PeerProcess.FreePort()).ToArray();
        var peerPorts = Enumerable.Range(0, size).Select(_ => PeerProcess.FreePort()).ToArray();
        var initialCluster = string.Join(',', Enumerable.Range(0, size).Select(i => $"m{i}=http://127.0.0.1:{peerPorts[i]}"));
        var members = new List<PeerProcess>();
        var http = new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(10) }) { Timeout = TimeSpan.FromSeconds(30) };
        try
        {
            for (var i = 0; i < size; i++)
            {
                var data = Path.Combine(folder, $"m{i}");
                Directory.CreateDirectory(data);
                members.Add(PeerProcess.Start($"etcd m{i}", "etcd",
                [
                    "--name", $"m{i}", "--data-dir", data,
                    "--listen-client-urls", $"http://127.0.0.1:{clientPorts[i]}", "--advertise-client-urls", $"http://127.0.0.1:{clientPorts[i]}",
                    "--listen-peer-urls", $"http://127.0.0.1:{peerPorts[i]}", "--initial-advertise-peer-urls", $"http://127.0.0.1:{peerPorts[i]}",
                    "--initial-cluster", initialCluster, "--initial-cluster-state", "new", "--initial-cluster-token", "quintet-bench",
                    "--logger", "zap", "--log-level", "warn",
                ], Path.Combine(folder, $"m{i}.log")));
            }

            var waited = Stopwatch.StartNew();
            while (true)
            {
                if (await FindLeaderAsync(http, clientPorts) is var (leader, version))
                {
                    return new EtcdPeer(members, http, clientPorts, leader, version);
                }

                if (waited.Elapsed > timeout || members.Any(m => m.HasExited))
                {
                    throw new InvalidOperationException($"The etcd cluster (pids {string.Join(", ", members.Select(m => m.ProcessId))}) elected no leader within {timeout.TotalSeconds:F0} s; last lines of m0's log:\n{members[0].TailLog()}");
                }

                await Task.Delay(250);
            }
        }
        catch
        {
            foreach (var member in members)
            {
                await member.DisposeAsync();
            }

            http.Dispose();
            throw;
        }
    }

    /// <summary>Puts <paramref name="value"/> at <paramref name="key"/> through the leader; throws unless etcd says 200.</summary>
    public async Task PutAsync(string key, byte[] value)
    {
        using var response = await _http.PostAsJsonAsync(new Uri(Leader, "/v3/kv/put"), new Put(Convert.ToBase64String(System.Text.Encoding.UTF8.GetBytes(key)), Convert.ToBase64String(value)));
        if (!response.IsSuccessStatusCode)
        {
            throw new HttpRequestException($"etcd put answered {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync()}");
        }
    }

    /// <summary>
    /// WAL fsyncs so far, summed over the members, from each member's Prometheus counter
    /// <c>etcd_disk_wal_fsync_duration_seconds_count</c>: etcd's own group commit, to set beside the store's.
    /// </summary>
    public async Task<long> WalSyncsAsync()
    {
        long total = 0;
        foreach (var port in _clientPorts)
        {
            var metrics = await _http.GetStringAsync(new Uri($"http://127.0.0.1:{port}/metrics"));
            var line = metrics.Split('\n').FirstOrDefault(l => l.StartsWith("etcd_disk_wal_fsync_duration_seconds_count ", StringComparison.Ordinal))
                ?? throw new InvalidOperationException($"etcd on port {port} publishes no etcd_disk_wal_fsync_duration_seconds_count.");
            total += (long)double.Parse(line.Split(' ')[1], CultureInfo.InvariantCulture);
        }

        return total;
    }

    public async ValueTask DisposeAsync()
    {
        _http.Dispose();
        foreach (var member in _members)
        {
            await member.DisposeAsync();
        }
    }

    private static async Task<(Uri Leader, string Version)?> FindLeaderAsync(HttpClient http, int[] clientPorts)
    {
        foreach (var port in clientPorts)
        {
            var endpoint = new Uri($"http://127.0.0.1:{port}");
            try
            {
                using var response = await http.PostAsJsonAsync(new Uri(endpoint, "/v3/maintenance/status"), new { });
                if (!response.IsSuccessStatusCode)
                {
                    continue;
                }

                using var status = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
                var self = status.RootElement.GetProperty("header").GetProperty("member_id").GetString();
                if (status.RootElement.TryGetProperty("leader", out var leader) && leader.GetString() == self)
                {
                    return (endpoint, status.RootElement.GetProperty("version").GetString() ?? "?");
                }
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException or KeyNotFoundException)
            {
                // Not listening or not ready yet.
            }
        }

        return null;
    }

    private sealed record Put(string Key, string Value);
}
