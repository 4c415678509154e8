using System.Text.Json;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Manager.Configuration;
using Quintet.Manager.Peers;

namespace Quintet.Manager.Lifetime;

/// <summary>Writes <see cref="ManagerOptions.EndpointFile"/> once the manager listens on its ports.</summary>
internal sealed partial class EndpointFileWriter(
    IOptions<ManagerOptions> options,
    ManagerIdentity identity,
    ClusterNode node,
    IHostApplicationLifetime lifetime,
    ILogger<EndpointFileWriter> logger) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (options.Value.EndpointFile is { } path)
        {
            lifetime.ApplicationStarted.Register(() => Write(path));
        }

        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    private void Write(string path)
    {
        var endpoints = new ManagerEndpoints(
            identity.NodeName,
            Environment.ProcessId,
            identity.GrpcEndpoint,
            node.SelfAddress.ToString(),
            node.Cluster.SelfUniqueAddress.Uid);
        var temporary = path + ".tmp";
        try
        {
            Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
            File.WriteAllText(temporary, JsonSerializer.Serialize(endpoints, ManagerEndpointsJson.Default.ManagerEndpoints));
            File.Move(temporary, path, overwrite: true);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            LogWriteFailed(logger, ex, path);
        }
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Could not write the endpoint file {Path} (Quintet:Manager:EndpointFile)")]
    private static partial void LogWriteFailed(ILogger logger, Exception exception, string path);
}
