using System.Diagnostics;
using Grpc.Core;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Components;
using Quintet.Manager.Calls;
using Quintet.Manager.Hosting;
using Quintet.Manager.Isolation;
using Quintet.Manager.Packages;
using Samples.Counter;

namespace Quintet.Manager.Tests.Isolation;

/// <summary>The isolated worker: its command line, its host in this process, and worker processes started and restarted by <see cref="IsolatedWorkers"/>.</summary>
public sealed class IsolatedWorkerTests : IDisposable
{
    private const string CounterManifest = """{"name":"Counter","version":"1.0.0","assembly":"Counter.dll","components":[{"class":"Samples.Counter.CounterComponent","contracts":["Samples.Counter.ICounter"]}]}""";
    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(b => b, b => b);
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-isolation-tests-").FullName;

    public void Dispose()
    {
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A worker killed a moment ago may still hold its database; the temp folder is cleared eventually.
        }
    }

    private string CounterPackage()
    {
        var directory = Path.Combine(_root, "package");
        Directory.CreateDirectory(directory);
        File.Copy(typeof(CounterComponent).Assembly.Location, Path.Combine(directory, "Counter.dll"), overwrite: true);
        File.WriteAllText(Path.Combine(directory, PackageManifest.FileName), CounterManifest);
        return directory;
    }

    private static async Task<long> AddAsync(CallInvoker invoker, string key, long amount)
    {
        var method = new Method<byte[], byte[]>(MethodType.Unary, "samples.counter.Counter", "Add", Bytes, Bytes);
        var reply = await invoker.AsyncUnaryCall(method, null, new CallOptions(new Metadata { { Quintet.Protocol.CallHeaders.Key, key } }, DateTime.UtcNow.AddSeconds(30)), Serialize(new AddRequest { Amount = amount }));
        return ProtoBuf.Serializer.Deserialize<CounterValue>(reply.AsSpan()).Value;
    }

    private static byte[] Serialize<T>(T message)
    {
        using var buffer = new MemoryStream();
        ProtoBuf.Serializer.Serialize(buffer, message);
        return buffer.ToArray();
    }

    [Fact]
    public void Worker_arguments_read_back_what_the_manager_wrote()
    {
        var written = new WorkerArguments("/p", "/d", 42, "/run/q/w1.sock", "manager-1");
        var args = written.ToArguments();
        Assert.True(WorkerArguments.IsWorkerCommand(args));
        Assert.Equal(written, WorkerArguments.Parse(args));
    }

    [Theory]
    [InlineData("unknown worker option '--bogus'", "worker", "--bogus", "x")]
    [InlineData("--package is required", "worker", "--data", "/d", "--parent", "1")]
    [InlineData("--parent must be a number", "worker", "--package", "/p", "--data", "/d", "--parent", "x")]
    [InlineData("--endpoint is required", "worker", "--package", "/p", "--data", "/d", "--parent", "1")]
    [InlineData("unknown worker option '--port'", "worker", "--package", "/p", "--data", "/d", "--parent", "1", "--port", "5000")]
    [InlineData("--data is given twice", "worker", "--data", "/d", "--data", "/e")]
    [InlineData("--manager needs a value", "worker", "--manager")]
    public void Bad_worker_arguments_are_refused_by_name(string expected, params string[] args) =>
        Assert.Contains(expected, Assert.Throws<FormatException>(() => WorkerArguments.Parse(args)).Message, StringComparison.Ordinal);

    [Fact]
    public void Restarts_back_off_from_half_a_second_doubling_to_ten_seconds()
    {
        var settings = new IsolatedWorkerSettings(new WorkerLaunch("dotnet", []), _root, "m", TimeProvider.System);
        Assert.Equal([0, 0.5, 1, 2, 4, 8, 10, 10, 10], Enumerable.Range(0, 9).Select(n => settings.Backoff(n).TotalSeconds));
        Assert.Equal(TimeSpan.FromSeconds(10), settings.Backoff(int.MaxValue));
    }

    [Fact]
    public void An_isolated_class_with_replicas_is_refused_at_deploy()
    {
        var directory = CounterPackage();
        File.WriteAllText(Path.Combine(directory, "quintet-qos.yaml"), "Samples.Counter.CounterComponent:\n  replication: primaryBackup\n  replicas: 2\n  isolation: process\n");
        var refused = Assert.Throws<PackageException>(() => PackageLoader.Load(directory));
        Assert.Contains("Samples.Counter.CounterComponent.isolation: process needs replication none for now", refused.Message, StringComparison.Ordinal);
        File.Delete(Path.Combine(directory, "quintet-qos.yaml"));
    }

    [Fact]
    public async Task The_worker_host_serves_its_package_per_key_and_deactivates_on_request()
    {
        var package = PackageLoader.Load(CounterPackage());
        using var endpoints = new WorkerEndpoints();
        var endpoint = endpoints.Next();
        var app = WorkerHost.Build(new WorkerArguments(package.Directory, Path.Combine(_root, "data"), Environment.ProcessId, endpoint, "manager-x"), package);
        await using (app)
        {
            await app.StartAsync();

            // No TCP port: the worker is reached only through its socket, in a folder only this user can open.
            var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses;
            Assert.All(addresses, a => Assert.StartsWith(OperatingSystem.IsWindows() ? "http://pipe:" : "http://unix:", a, StringComparison.Ordinal));
            if (!OperatingSystem.IsWindows())
            {
                WorkerEndpoints.Restrict(endpoint);
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute, File.GetUnixFileMode(Path.GetDirectoryName(endpoint)!));
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(endpoint));
            }

            using var channel = GrpcChannel.ForAddress(WorkerEndpoints.ChannelAddress, new GrpcChannelOptions { HttpHandler = WorkerEndpoints.Handler(endpoint) });
            var invoker = channel.CreateCallInvoker();
            Assert.Equal(5, await AddAsync(invoker, "a", 5));
            Assert.Equal(7, await AddAsync(invoker, "a", 2));
            Assert.Equal(1, await AddAsync(invoker, "b", 1));
            await Task.WhenAll(Enumerable.Range(0, 32).Select(_ => AddAsync(invoker, "c", 1)));
            Assert.Equal(33, await AddAsync(invoker, "c", 1));

            var unknown = await Assert.ThrowsAsync<RpcException>(() => invoker.AsyncUnaryCall(
                new Method<byte[], byte[]>(MethodType.Unary, "acme.Nothing", "Add", Bytes, Bytes), null, new CallOptions(deadline: DateTime.UtcNow.AddSeconds(30)), []).ResponseAsync);
            Assert.Equal(StatusCode.Unimplemented, unknown.StatusCode);
            Assert.Contains("package Counter", unknown.Status.Detail, StringComparison.Ordinal);

            // Deactivated: its next call activates it afresh (the Counter keeps nothing in its checkpoint stream).
            var instances = app.Services.GetRequiredService<WorkerInstances>();
            Assert.Equal(3, instances.Count);
            Assert.True(await instances.DeactivateAsync("Samples.Counter.CounterComponent", "a", DeactivationReason.Retired, CancellationToken.None));
            Assert.Equal(2, instances.Count);
            Assert.Equal(1, await AddAsync(invoker, "a", 1));

            // The stop request stops the host.
            var stopping = app.Services.GetRequiredService<IHostApplicationLifetime>().ApplicationStopping;
            var stop = new Method<byte[], byte[]>(MethodType.Unary, WorkerControl.ControlService, WorkerControl.StopOperation, Bytes, Bytes);
            await invoker.AsyncUnaryCall(stop, null, new CallOptions(deadline: DateTime.UtcNow.AddSeconds(30)), [(byte)DeactivationReason.Undeployed]);
            Assert.True(stopping.IsCancellationRequested);
            Assert.Equal(DeactivationReason.Undeployed, instances.StopReason);
            await app.StopAsync();
            using var budget = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            await instances.DeactivateAllAsync(budget.Token);
            Assert.Equal(0, instances.Count);
        }

        package.Unload();
    }

    [Fact]
    public async Task A_worker_process_is_started_on_first_call_restarted_after_it_dies_and_stopped_on_request()
    {
        var package = PackageLoader.Load(CounterPackage());
        var settings = new IsolatedWorkerSettings(WorkerLaunch.ForThisProcess(), Path.Combine(_root, "workers"), "manager-x", TimeProvider.System);
        await using var workers = new IsolatedWorkers(settings, NullLogger<IsolatedWorkers>.Instance);
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(60));

        async Task<long> Add(string key, long amount) =>
            ProtoBuf.Serializer.Deserialize<CounterValue>((await workers.InvokeAsync(package, "samples.counter.Counter", "Add", key, Serialize(new AddRequest { Amount = amount }), deadline.Token)).AsSpan()).Value;

        Assert.Null(workers.ProcessIdOf("Counter"));
        Assert.Equal(3, await Add("k", 3));
        Assert.Equal(5, await Add("k", 2));
        var first = workers.ProcessIdOf("Counter");
        Assert.NotNull(first);
        Assert.NotEqual(Environment.ProcessId, first);

        // A status the worker sends comes back as it was.
        var unknown = await Assert.ThrowsAsync<InvocationException>(() => workers.InvokeAsync(package, "samples.counter.Counter", "Reset", "k", Array.Empty<byte>(), deadline.Token));
        Assert.Equal(StatusCode.Unimplemented, unknown.Code);
        Assert.Contains("Add, Get", unknown.Message, StringComparison.Ordinal);

        // Killed from outside between calls: the next call starts another worker, whose instance starts afresh.
        using (var process = Process.GetProcessById(first.Value))
        {
            process.Kill();
            await process.WaitForExitAsync(deadline.Token);
        }

        var again = await RetryWhileUnavailableAsync(() => Add("k", 1), deadline.Token);
        Assert.Equal(1, again);
        var second = workers.ProcessIdOf("Counter");
        Assert.NotNull(second);
        Assert.NotEqual(first, second);

        Assert.True(await workers.DeactivateAsync("Counter", "Samples.Counter.CounterComponent", "k", DeactivationReason.Retired, deadline.Token));
        Assert.Equal(4, await Add("k", 4));

        using var secondProcess = Process.GetProcessById(second.Value);
        Assert.True(await workers.StopAsync("Counter", deadline.Token));
        Assert.True(secondProcess.HasExited);

        Assert.Null(workers.ProcessIdOf("Counter"));
        Assert.False(await workers.StopAsync("Counter", deadline.Token));
    }

    /// <summary>A call that races the exit of a killed worker may see it as a crash; the one after it restarts the worker.</summary>
    private static async Task<T> RetryWhileUnavailableAsync<T>(Func<Task<T>> call, CancellationToken cancellationToken)
    {
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                return await call();
            }
            catch (InvocationException e) when (e.Code == StatusCode.Unavailable && attempt < 3)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(100), cancellationToken);
            }
        }
    }
}
