using System.Collections.Concurrent;
using Grpc.Core;
using Grpc.Health.V1;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Core.Serialization;
using Quintet.Manager.Health;
using ServingStatus = Grpc.Health.V1.HealthCheckResponse.Types.ServingStatus;

namespace Quintet.Manager.Tests.Health;

/// <summary>
/// <c>grpc.health.v1</c> answers <c>SERVING</c> only while the manager is Up: a manager that is joining is not ready, and
/// says so, but a join is expected at every start and is not logged as an error (only a removal is).
/// </summary>
public sealed class ManagerHealthTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task A_joining_manager_is_not_serving_and_its_health_is_logged_below_error()
    {
        using var timeout = new CancellationTokenSource(Bound);
        var logs = new RecordingLoggerProvider();
        var services = new ServiceCollection();
        services.AddLogging(l => l.AddProvider(logs).SetMinimumLevel(LogLevel.Trace));
        services.AddSingleton(Options.Create(new ClusterOptions()));
        services.AddSingleton<IEnumerable<WireProtoFile>>([]);
        services.AddSingleton<ClusterNode>();
        services.AddSingleton<IHostApplicationLifetime, StillRunning>();
        services.AddSingleton<ManagerHealthService>();
        services.AddManagerHealth();
        await using var provider = services.BuildServiceProvider();

        // Never started, so never Up: as a manager is while it joins.
        var report = await provider.GetRequiredService<HealthCheckService>().CheckHealthAsync(timeout.Token);
        Assert.Equal(HealthStatus.Degraded, report.Status);
        var health = provider.GetRequiredService<ManagerHealthService>();
        var answer = await health.Check(new HealthCheckRequest(), new TestCallContext(timeout.Token));
        Assert.Equal(ServingStatus.NotServing, answer.Status);

        using var watching = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
        var stream = new RecordingStream(watching);
        await health.Watch(new HealthCheckRequest(), stream, new TestCallContext(watching.Token));
        Assert.Equal([ServingStatus.NotServing], stream.Written);

        var errors = logs.Entries.Where(e => e.Level >= LogLevel.Error).ToList();
        Assert.True(errors.Count == 0, "logged at error while joining: " + string.Join("; ", errors.Select(e => $"{e.Category}: {e.Message}")));
        Assert.Contains(logs.Entries, e => e.Level == LogLevel.Warning && e.Message.Contains("not yet Up", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData(HealthStatus.Healthy, ServingStatus.Serving)]
    [InlineData(HealthStatus.Degraded, ServingStatus.NotServing)]
    [InlineData(HealthStatus.Unhealthy, ServingStatus.NotServing)]
    public async Task Only_a_healthy_check_makes_the_manager_serving(HealthStatus status, ServingStatus expected)
    {
        using var timeout = new CancellationTokenSource(Bound);
        var services = new ServiceCollection();
        services.AddLogging();
        services.AddSingleton<IHostApplicationLifetime, StillRunning>();
        services.AddSingleton<ManagerHealthService>();
        services.AddHealthChecks().AddCheck("fixed", () => new HealthCheckResult(status));
        await using var provider = services.BuildServiceProvider();
        var answer = await provider.GetRequiredService<ManagerHealthService>().Check(new HealthCheckRequest(), new TestCallContext(timeout.Token));
        Assert.Equal(expected, answer.Status);
        var unknown = await Assert.ThrowsAsync<RpcException>(() => provider.GetRequiredService<ManagerHealthService>().Check(new HealthCheckRequest { Service = "other" }, new TestCallContext(timeout.Token)));
        Assert.Equal(StatusCode.NotFound, unknown.StatusCode);
    }

    /// <summary>Records what a watch wrote; the first write ends the watch, as a watcher that leaves.</summary>
    private sealed class RecordingStream(CancellationTokenSource leave) : IServerStreamWriter<HealthCheckResponse>
    {
        public List<ServingStatus> Written { get; } = [];

        public WriteOptions? WriteOptions { get; set; }

        public Task WriteAsync(HealthCheckResponse message)
        {
            Written.Add(message.Status);
            leave.Cancel();
            return Task.CompletedTask;
        }
    }

    private sealed class StillRunning : IHostApplicationLifetime
    {
        public CancellationToken ApplicationStarted => CancellationToken.None;

        public CancellationToken ApplicationStopping => CancellationToken.None;

        public CancellationToken ApplicationStopped => CancellationToken.None;

        public void StopApplication()
        {
        }
    }

    private sealed class RecordingLoggerProvider : ILoggerProvider
    {
        public ConcurrentQueue<(string Category, LogLevel Level, string Message)> Entries { get; } = new();

        public ILogger CreateLogger(string categoryName) => new Recorder(this, categoryName);

        public void Dispose()
        {
        }

        private sealed class Recorder(RecordingLoggerProvider provider, string category) : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state)
                where TState : notnull => null;

            public bool IsEnabled(LogLevel logLevel) => true;

            public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
                provider.Entries.Enqueue((category, logLevel, formatter(state, exception)));
        }
    }

    private sealed class TestCallContext(CancellationToken cancellationToken) : ServerCallContext
    {
        protected override string MethodCore => "/grpc.health.v1.Health/Check";

        protected override string HostCore => "localhost";

        protected override string PeerCore => "test";

        protected override DateTime DeadlineCore => DateTime.MaxValue;

        protected override Metadata RequestHeadersCore => [];

        protected override CancellationToken CancellationTokenCore => cancellationToken;

        protected override Metadata ResponseTrailersCore => [];

        protected override Status StatusCore { get; set; }

        protected override WriteOptions? WriteOptionsCore { get; set; }

        protected override AuthContext AuthContextCore => new(null, []);

        protected override ContextPropagationToken CreatePropagationTokenCore(ContextPropagationOptions? options) => throw new NotSupportedException();

        protected override Task WriteResponseHeadersAsyncCore(Metadata responseHeaders) => Task.CompletedTask;
    }
}
