using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Globalization;
using System.Net;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Google.Protobuf;
using Quintet.Protocol;
using Quintet.Protocol.Cluster;
using Samples.Counter;

namespace Quintet.Client.Tests;

/// <summary>
/// One call a fake manager received: which manager, for which key, which method, in which trace (<c>traceparent</c>,
/// if any), and the client's call identity headers (null where absent).
/// </summary>
internal sealed record FakeCall(string Manager, string Key, string Method, string? TraceParent = null, string? ClientId = null, string? Sequence = null, string? AnsweredBelow = null);

/// <summary>
/// How a fake manager answers a call: it serves it (naming an owner in <c>quintet-served-by</c> when
/// <see cref="ServedBy"/> is set, as a manager that passed the call on does), or fails it with a status.
/// </summary>
internal sealed record FakeAnswer(StatusCode Status, string? ServedBy = null, string Detail = "")
{
    public static FakeAnswer Serve() => new(StatusCode.OK);

    public static FakeAnswer PassOnTo(FakeManager owner) => new(StatusCode.OK, owner.Endpoint);

    public static FakeAnswer Fail(StatusCode status, string detail) => new(status, null, detail);
}

/// <summary>
/// Managers that answer component calls in-process on loopback ports, as the test says, recording every call in the
/// order it arrived (across all of them): enough to watch the client's routing and failover without a cluster.
/// </summary>
internal sealed class FakeManagers : IAsyncDisposable
{
    private FakeManagers()
    {
    }

    public List<FakeManager> Managers { get; } = [];

    public ConcurrentQueue<FakeCall> Calls { get; } = new();

    public FakeManager this[int index] => Managers[index];

    public static async Task<FakeManagers> StartAsync(int count)
    {
        var managers = new FakeManagers();
        try
        {
            for (var i = 0; i < count; i++)
            {
                managers.Managers.Add(await FakeManager.StartAsync($"fake-{i}", managers.Calls));
            }
        }
        catch
        {
            await managers.DisposeAsync();
            throw;
        }

        return managers;
    }

    /// <summary>The managers the calls for <paramref name="key"/> went to, in order.</summary>
    public List<string> CallsFor(string key) => [.. Calls.Where(c => c.Key == key).Select(c => c.Manager)];

    public async ValueTask DisposeAsync()
    {
        foreach (var manager in Managers)
        {
            await manager.DisposeAsync();
        }
    }
}

/// <summary>One fake manager: serves every call for the counter contract as <see cref="Answer"/> says.</summary>
internal sealed class FakeManager : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly ConcurrentQueue<FakeCall> _calls;

    private FakeManager(string name, WebApplication app, string endpoint, ConcurrentQueue<FakeCall> calls)
    {
        Name = name;
        _app = app;
        Endpoint = endpoint;
        _calls = calls;
    }

    public string Name { get; }

    public string Endpoint { get; }

    /// <summary>The answer to a call for a key; serves every call itself by default.</summary>
    public Func<string, FakeAnswer> Answer { get; set; } = _ => FakeAnswer.Serve();

    /// <summary>
    /// Whether it serves <c>WatchManagers</c>, streaming what <see cref="PublishView"/> gives; otherwise it answers
    /// <c>UNIMPLEMENTED</c>, as a manager of a version without it, and records nothing.
    /// </summary>
    public bool ServesView { get; set; }

    /// <summary>How many watches of the view it served, in all.</summary>
    public int Watches => Volatile.Read(ref _watches);

    /// <summary>Sends <paramref name="view"/> to the watches open on this manager, and to those that open later.</summary>
    public void PublishView(WatchManagersResponse view)
    {
        TaskCompletionSource changed;
        lock (_viewGate)
        {
            _view = view;
            changed = _viewChanged;
            _viewChanged = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        changed.TrySetResult();
    }

    private readonly Lock _viewGate = new();
    private WatchManagersResponse? _view;
    private TaskCompletionSource _viewChanged = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _watches;

    /// <summary>Runs before each answer, with the request's abort token: a test holds calls here.</summary>
    public Func<string, CancellationToken, Task>? BeforeAnswer { get; set; }

    public static async Task<FakeManager> StartAsync(string name, ConcurrentQueue<FakeCall> calls)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        var app = builder.Build();
        FakeManager? manager = null;
        app.Run(context => manager!.ServeAsync(context));
        await app.StartAsync();
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.Single();
        manager = new FakeManager(name, app, address.TrimEnd('/'), calls);
        return manager;
    }

    /// <summary>Answers one unary gRPC call by hand: a <see cref="CounterValue"/> naming the serving manager, or a status.</summary>
    private async Task ServeAsync(HttpContext context)
    {
        if (context.Request.Path == $"/{ClusterView.Descriptor.FullName}/WatchManagers")
        {
            await ServeViewAsync(context);
            return;
        }

        await context.Request.Body.CopyToAsync(Stream.Null);
        var key = context.Request.Headers[CallHeaders.Key].ToString();
        var headers = context.Request.Headers;
        var traceParent = headers.TryGetValue("traceparent", out var value) ? value.ToString() : null;

        // quintet-call is "{client-id}:{sequence}:{answered-below}"; each part as the call carried it, or null.
        var call = headers.TryGetValue(CallHeaders.Call, out var callValue) ? callValue.ToString().Split(':') : [];
        string? CallPart(int index) => index < call.Length ? call[index] : null;
        _calls.Enqueue(new FakeCall(
            Name, key, context.Request.Path.Value ?? string.Empty, traceParent,
            CallPart(0), CallPart(1), CallPart(2)));
        if (BeforeAnswer is { } beforeAnswer)
        {
            await beforeAnswer(key, context.RequestAborted);
        }

        var answer = Answer(key);
        var response = context.Response;
        response.ContentType = "application/grpc";
        if (answer.Status != StatusCode.OK)
        {
            // A trailers-only response, as a server that fails a call before any message sends it.
            response.Headers["grpc-status"] = ((int)answer.Status).ToString(CultureInfo.InvariantCulture);
            response.Headers["grpc-message"] = Uri.EscapeDataString(answer.Detail);
            return;
        }

        if (answer.ServedBy is { } servedBy)
        {
            response.Headers[CallHeaders.ServedBy] = servedBy;
        }

        using var message = new MemoryStream();
        ProtoBuf.Serializer.Serialize(message, new CounterValue { Value = 1, Manager = Name });
        var frame = new byte[5 + message.Length];
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(1), (uint)message.Length);
        message.ToArray().CopyTo(frame, 5);
        await response.Body.WriteAsync(frame);
        response.AppendTrailer("grpc-status", "0");
    }

    /// <summary>Streams the view published last, and each one published after, until the watch ends.</summary>
    private async Task ServeViewAsync(HttpContext context)
    {
        var response = context.Response;
        response.ContentType = "application/grpc";
        if (!ServesView)
        {
            response.Headers["grpc-status"] = ((int)StatusCode.Unimplemented).ToString(CultureInfo.InvariantCulture);
            return;
        }

        Interlocked.Increment(ref _watches);
        WatchManagersResponse? sent = null;
        try
        {
            while (true)
            {
                WatchManagersResponse? view;
                Task changed;
                lock (_viewGate)
                {
                    (view, changed) = (_view, _viewChanged.Task);
                }

                if (view is not null && !ReferenceEquals(view, sent))
                {
                    var bytes = view.ToByteArray();
                    var frame = new byte[5 + bytes.Length];
                    BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(1), (uint)bytes.Length);
                    bytes.CopyTo(frame, 5);
                    await response.Body.WriteAsync(frame, context.RequestAborted);
                    await response.Body.FlushAsync(context.RequestAborted);
                    sent = view;
                }

                await changed.WaitAsync(context.RequestAborted);
            }
        }
        catch (OperationCanceledException)
        {
            // The watch ended.
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
