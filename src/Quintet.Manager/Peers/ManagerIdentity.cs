using System.Diagnostics;
using System.Reflection;
using Google.Protobuf.WellKnownTypes;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Quintet.Manager.Health;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Peers;

/// <summary>Who this manager is and where it listens: what it tells the others and the admin tools about itself.</summary>
internal sealed class ManagerIdentity(string nodeName, string advertisedHost, IServer server, IHostApplicationLifetime lifetime, TimeProvider time, ManagerProblems problems)
{
    private static readonly string ProductVersion =
        typeof(ManagerIdentity).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion ?? "unknown";

    private readonly DateTimeOffset _startedAt = time.GetUtcNow();

    public string NodeName { get; } = nodeName;

    /// <summary>When this run of the manager started (a restart in process starts a new run).</summary>
    public DateTimeOffset StartedAt => _startedAt;

    /// <summary>Restarts in process before this run.</summary>
    public int Restarts { get; init; }

    /// <summary>The gRPC endpoint as clients should dial it, with the port actually bound.</summary>
    public string GrpcEndpoint
    {
        get
        {
            var bound = server.Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault();
            if (bound is null || !Uri.TryCreate(bound, UriKind.Absolute, out var uri))
            {
                return string.Empty;
            }

            return $"{uri.Scheme}://{advertisedHost}:{uri.Port}";
        }
    }

    /// <summary>
    /// The gRPC endpoint once the server listens. Hosted services (the directory among them) start before Kestrel binds,
    /// and an endpoint announced before then would be empty for good in every other manager's copy.
    /// </summary>
    /// <exception cref="OperationCanceledException">The manager stopped before it listened.</exception>
    public async Task<string> ListeningEndpointAsync()
    {
        if (!lifetime.ApplicationStarted.IsCancellationRequested)
        {
            var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            await using (lifetime.ApplicationStarted.Register(() => started.TrySetResult()))
            {
                await started.Task.WaitAsync(lifetime.ApplicationStopping);
            }
        }

        return GrpcEndpoint;
    }

    public ManagerReport CreateReport()
    {
        using var process = Process.GetCurrentProcess();
        return new ManagerReport
        {
            NodeName = NodeName,
            GrpcEndpoint = GrpcEndpoint,
            ProcessId = Environment.ProcessId,
            WorkingSetBytes = process.WorkingSet64,
            ManagedHeapBytes = GC.GetTotalMemory(forceFullCollection: false),
            StartedAt = Timestamp.FromDateTimeOffset(_startedAt),
            Version = ProductVersion,
            Problems = { problems.Current },
            Restarts = Restarts,
        };
    }
}
