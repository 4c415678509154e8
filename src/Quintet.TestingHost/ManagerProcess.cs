using System.Diagnostics;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json;
using Grpc.Net.Client;
using Quintet.Protocol.Admin;
using Quintet.Security;

namespace Quintet.TestingHost;

/// <summary>
/// One manager of a <see cref="LocalCluster"/>: a node identity (name and ports) and the OS process currently
/// running it. A restart keeps the name and ports and starts a new process, which joins as a new incarnation.
/// </summary>
public sealed class ManagerProcess : IAsyncDisposable
{
    private readonly LocalClusterOptions _options;
    private readonly string _managerPath;
    private readonly List<string> _logFiles = [];
    private Process? _process;
    private GrpcChannel? _channel;
    private (ClusterTrust Trust, X509Certificate2 Certificate)? _channelCredentials;

    internal ManagerProcess(int index, LocalClusterOptions options, string managerPath, string logDirectory)
    {
        Index = index;
        Name = $"manager-{index}";
        _options = options;
        _managerPath = managerPath;
        LogDirectory = logDirectory;
    }

    /// <summary>1 for the first manager started, 2 for the next, and so on.</summary>
    public int Index { get; }

    /// <summary>The manager's node name, <c>manager-N</c>.</summary>
    public string Name { get; }

    /// <summary>How many processes have run this manager so far.</summary>
    public int Incarnation => _logFiles.Count;

    /// <summary>The cluster port, fixed at the first start and kept by restarts.</summary>
    public int ClusterPort { get; private set; }

    /// <summary>The gRPC port, fixed at the first start and kept by restarts.</summary>
    public int GrpcPort { get; private set; }

    /// <summary>
    /// The cluster address, for example <c>akka.tcp://quintet-test-1a2b@127.0.0.1:40123</c>
    /// (<c>akka.ssl.tcp://</c> with <see cref="LocalClusterOptions.Certificates"/>).
    /// </summary>
    public string ClusterAddress { get; private set; } = string.Empty;

    /// <summary>The gRPC endpoint, for example <c>http://127.0.0.1:40124</c> (<c>https</c> on a secured cluster).</summary>
    public string GrpcEndpoint { get; private set; } = string.Empty;

    /// <summary>The uid of the current incarnation, as the manager reported it at start.</summary>
    public long Uid { get; private set; }

    /// <summary>The OS process id of the current incarnation.</summary>
    public int ProcessId { get; private set; }

    /// <summary>True between the pause and the resume of the current process.</summary>
    public bool IsPaused { get; private set; }

    /// <summary>True while the current process has not exited (paused counts as running).</summary>
    public bool IsRunning => _process is { HasExited: false };

    /// <summary>The exit code of the last process, once it has exited.</summary>
    public int? ExitCode => _process is { HasExited: true } p ? p.ExitCode : null;

    /// <summary>The folder of this manager's log files.</summary>
    public string LogDirectory { get; }

    /// <summary>The manager's data folder (packages, checkpoints): beside its logs, kept across its restarts.</summary>
    public string DataDirectory => Path.Combine(LogDirectory, Name + "-data");

    /// <summary>The output of the current (or last) process.</summary>
    public string LogFile => _logFiles.Count > 0 ? _logFiles[^1] : string.Empty;

    /// <summary>The outputs of every process that ran this manager, oldest first.</summary>
    public IReadOnlyList<string> LogFiles => _logFiles;

    /// <summary>
    /// The certificates folder this manager starts with: its own (beside its logs) with
    /// <see cref="LocalClusterOptions.CertificatesPerManager"/>, else <see cref="LocalClusterOptions.Certificates"/>'
    /// folder; empty when security is off. Files changed here take effect at the manager's next start.
    /// </summary>
    public string CertificatesDirectory => _options.Certificates is not { } certificates
        ? string.Empty
        : _options.CertificatesPerManager ? Path.Combine(LogDirectory, Name + "-certs") : certificates.Directory;

    /// <summary>A client of this manager's admin API.</summary>
    public ClusterAdmin.ClusterAdminClient Admin => new(Channel);

    /// <summary>
    /// A gRPC channel to this manager, for any service it serves. On a secured cluster
    /// (<see cref="LocalClusterOptions.Certificates"/>) it is https and presents the cluster's <c>admin</c> client
    /// certificate (<see cref="LocalCertificates.AdminCertificate"/>), unless
    /// <see cref="LocalCluster.UseChannelCredentials"/> gave others.
    /// </summary>
    public GrpcChannel Channel => _channel ??= _channelCredentials is { } given
        ? LocalCertificates.CreateChannel(GrpcEndpoint, given.Trust, given.Certificate)
        : _options.Certificates is { } certificates
            ? certificates.CreateChannel(GrpcEndpoint, certificates.AdminCertificate)
            : GrpcChannel.ForAddress(GrpcEndpoint);

    /// <inheritdoc />
    public override string ToString() => $"{Name} (pid {ProcessId}, {ClusterAddress})";

    /// <summary>Replaces <see cref="Channel"/> with one that trusts <paramref name="trust"/> and presents <paramref name="certificate"/>.</summary>
    internal void UseChannelCredentials(ClusterTrust trust, X509Certificate2 certificate)
    {
        _channelCredentials = (trust, certificate);
        _channel?.Dispose();
        _channel = null;
    }

    internal async Task StartAsync(IReadOnlyCollection<string> seeds, CancellationToken cancellationToken)
    {
        if (IsRunning)
        {
            throw new InvalidOperationException($"{Name} is already running as process {ProcessId}.");
        }

        var incarnation = _logFiles.Count + 1;
        var logFile = Path.Combine(LogDirectory, $"{Name}.{incarnation}.log");
        var endpointFile = Path.Combine(LogDirectory, $"{Name}.{incarnation}.endpoint.json");
        _logFiles.Add(logFile);
        File.Delete(endpointFile);

        var host = _options.Network?.AddressOf(Index) ?? _options.Host;
        var arguments = new List<string>
        {
            "exec", _managerPath,
            $"--Quintet:Cluster:Name={_options.ClusterName}",
            $"--Quintet:Cluster:Host={host}",
            $"--Quintet:Cluster:Port={ClusterPort}",
            $"--Quintet:Manager:GrpcPort={GrpcPort}",
            $"--Quintet:Manager:NodeName={Name}",
            $"--Quintet:Manager:DataDirectory={DataDirectory}",
            $"--Quintet:Manager:EndpointFile={endpointFile}",
            $"--Quintet:Manager:ParentProcessId={Environment.ProcessId}",
        };
        arguments.AddRange(seeds.Select((seed, i) => $"--Quintet:Cluster:Seeds:{i}={seed}"));
        if (!_options.Settings.ContainsKey("Quintet:Store:Managers"))
        {
            // The replicated store's majority is of the cluster's size from the start, not of the managers seen so far.
            arguments.Add($"--Quintet:Store:Managers={_options.InitialManagers}");
        }

        if (_options.Certificates is { } certificates)
        {
            if (_options.CertificatesPerManager && !Directory.Exists(CertificatesDirectory))
            {
                Directory.CreateDirectory(CertificatesDirectory);
                foreach (var file in new[] { CertificateFiles.AuthorityCertificate, CertificateFiles.ManagerCertificate, CertificateFiles.ManagerKey })
                {
                    File.Copy(Path.Combine(certificates.Directory, file), Path.Combine(CertificatesDirectory, file));
                }
            }

            arguments.Add($"--Quintet:Security:CertificatesDirectory={CertificatesDirectory}");
        }
        else if (_options.Network is not null)
        {
            arguments.Add("--Quintet:Security:AllowInsecure=true");
        }

        arguments.AddRange(_options.Settings.Select(s => $"--{s.Key}={s.Value}"));

        if (_options.Network is { } network)
        {
            // Inside the namespace; the prefix execs the manager, so the process id stays the manager's own.
            var prefix = network.CommandPrefix(Index);
            arguments.InsertRange(0, [.. prefix.Skip(1), ManagerLocator.DotnetHost()]);
            _process = ProcessLauncher.Start(prefix[0], arguments, logFile);
        }
        else
        {
            _process = ProcessLauncher.Start(ManagerLocator.DotnetHost(), arguments, logFile);
        }

        IsPaused = false;
        ProcessId = _process.Id;

        var endpoints = await WaitForEndpointFileAsync(endpointFile, cancellationToken);
        ClusterPort = Akka.Actor.Address.Parse(endpoints.ClusterAddress).Port
            ?? throw new InvalidOperationException($"{Name} published the cluster address '{endpoints.ClusterAddress}' without a port.");
        GrpcPort = new Uri(endpoints.GrpcEndpoint).Port;
        ClusterAddress = endpoints.ClusterAddress;
        if (GrpcEndpoint != endpoints.GrpcEndpoint)
        {
            _channel?.Dispose();
            _channel = null;
            GrpcEndpoint = endpoints.GrpcEndpoint;
        }

        Uid = endpoints.Uid;
    }

    internal async Task KillAsync(CancellationToken cancellationToken)
    {
        if (_process is not { HasExited: false } process)
        {
            return;
        }

        process.Kill();
        await process.WaitForExitAsync(cancellationToken);
        IsPaused = false;
    }

    internal void Signal(int signal)
    {
        if (_process is not { HasExited: false } process)
        {
            throw new InvalidOperationException($"{Name} is not running.");
        }

        UnixSignals.Send(process.Id, signal);
        IsPaused = signal == UnixSignals.SigStop;
    }

    internal async Task<int> WaitForExitAsync(TimeSpan timeout, CancellationToken cancellationToken)
    {
        var process = _process ?? throw new InvalidOperationException($"{Name} was never started.");
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        bounded.CancelAfter(timeout);
        try
        {
            await process.WaitForExitAsync(bounded.Token);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            throw new TimeoutException($"{Name} (pid {process.Id}) did not exit within {timeout.TotalSeconds:F0} s.");
        }

        return process.ExitCode;
    }

    /// <summary>The last lines of the current process's output.</summary>
    public string TailLog(int lines = 60)
    {
        if (!File.Exists(LogFile))
        {
            return $"({LogFile} does not exist)";
        }

        using var stream = new FileStream(LogFile, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        using var reader = new StreamReader(stream);
        var all = reader.ReadToEnd().Split('\n');
        return string.Join('\n', all.TakeLast(lines));
    }

    /// <summary>Kills the process if it still runs and releases the channel.</summary>
    public async ValueTask DisposeAsync()
    {
        if (_process is { HasExited: false } process)
        {
            if (IsPaused)
            {
                // A stopped process still dies of SIGKILL; resuming first lets it release its sockets at once.
                UnixSignals.Send(process.Id, UnixSignals.SigCont);
            }

            process.Kill();
            using var bounded = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            try
            {
                await process.WaitForExitAsync(bounded.Token);
            }
            catch (OperationCanceledException)
            {
                // Nothing more can be done for a process that ignores SIGKILL; the bound keeps disposal finite.
            }
        }

        _process?.Dispose();
        _channel?.Dispose();
    }

    private async Task<EndpointFile> WaitForEndpointFileAsync(string path, CancellationToken cancellationToken)
    {
        var started = Stopwatch.StartNew();
        while (true)
        {
            cancellationToken.ThrowIfCancellationRequested();
            if (File.Exists(path))
            {
                try
                {
                    var text = await File.ReadAllTextAsync(path, cancellationToken);
                    return JsonSerializer.Deserialize<EndpointFile>(text, EndpointFile.JsonOptions)
                        ?? throw new InvalidDataException($"{path} is empty.");
                }
                catch (IOException)
                {
                    // Caught between the manager's write and its rename; read again on the next round.
                }
            }

            if (_process is { HasExited: true } exited)
            {
                throw new InvalidOperationException(
                    $"{Name} exited with code {exited.ExitCode} before it was listening. Its output ({LogFile}):\n{TailLog(40)}");
            }

            if (started.Elapsed > _options.Timeout)
            {
                throw new TimeoutException($"{Name} did not start listening within {_options.Timeout.TotalSeconds:F0} s. Its output ({LogFile}):\n{TailLog(40)}");
            }

            await Task.Delay(50, cancellationToken);
        }
    }

    private sealed record EndpointFile(string NodeName, int ProcessId, string GrpcEndpoint, string ClusterAddress, long Uid)
    {
        public static readonly JsonSerializerOptions JsonOptions = new(JsonSerializerDefaults.Web);
    }
}
