using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Quintet.Core.Groups;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Tests.Calls;

public class UnaryFramingTests
{
    /// <summary>
    /// A paused manager, once resumed, reads the calls its clients gave up on meanwhile: their streams were reset before
    /// the request arrived. Nothing ran and nobody is left to answer; an error line would send an operator looking for a
    /// fault. Kestrel need not have marked the request aborted yet, as here.
    /// </summary>
    [Fact]
    public async Task A_call_reset_by_its_client_before_the_request_arrived_runs_nothing_and_logs_no_error()
    {
        var logs = new RecordingLoggerProvider();
        await using var services = new ServiceCollection().AddLogging(b => b.SetMinimumLevel(LogLevel.Trace).AddProvider(logs)).BuildServiceProvider();
        var context = new DefaultHttpContext { RequestServices = services };
        context.Request.ContentType = "application/grpc";
        context.Request.Body = new ResetStream();
        var ran = false;

        await UnaryFraming.ServeAsync(context, "samples.bank.Account", "Deposit", (_, _) =>
        {
            ran = true;
            return Task.FromException<InvocationResult>(new InvalidOperationException("must not run"));
        });

        Assert.False(ran);
        Assert.DoesNotContain(logs.Entries, e => e.Level >= LogLevel.Warning);
        Assert.Contains(logs.Entries, e => e.Level == LogLevel.Debug && e.Message.Contains("reset the call before its request arrived", StringComparison.Ordinal));
    }

    /// <summary>
    /// A manager cut off from the cluster's majority, or rejoining as a new member, cannot reach the groups a call needs
    /// (the instance directory, its backups): another manager can serve the call now, and the client fails over only on
    /// UNAVAILABLE. It answered INTERNAL, logged as an error, before.
    /// </summary>
    [Fact]
    public async Task A_call_that_needs_a_group_this_manager_left_is_answered_unavailable_and_logged_below_warning()
    {
        var logs = new RecordingLoggerProvider();
        await using var services = new ServiceCollection().AddLogging(b => b.SetMinimumLevel(LogLevel.Trace).AddProvider(logs)).BuildServiceProvider();
        var (context, trailers) = CallWithOneMessage(services);

        await UnaryFraming.ServeAsync(context, "samples.bank.Account", "Deposit", (_, _) =>
            Task.FromException<InvocationResult>(new GroupUnavailableException("This member is no longer in light group 'quintet.rsm/directory'")));

        Assert.Equal("14", trailers["grpc-status"].ToString());
        Assert.Contains("call%20another%20manager", trailers["grpc-message"].ToString(), StringComparison.Ordinal);
        Assert.DoesNotContain(logs.Entries, e => e.Level >= LogLevel.Warning);
    }

    /// <summary>
    /// A call that fails after its caller went away (it gave up, or this manager is stopping) has nobody to answer: the
    /// failure is not let out to the server, which would log it as an unhandled error.
    /// </summary>
    [Fact]
    public async Task A_call_that_fails_after_its_caller_went_away_is_not_let_out_and_logs_no_error()
    {
        var logs = new RecordingLoggerProvider();
        await using var services = new ServiceCollection().AddLogging(b => b.SetMinimumLevel(LogLevel.Trace).AddProvider(logs)).BuildServiceProvider();
        var (context, _) = CallWithOneMessage(services);
        using var aborted = new CancellationTokenSource();
        context.RequestAborted = aborted.Token;

        await UnaryFraming.ServeAsync(context, "samples.bank.Account", "Deposit", async (_, _) =>
        {
            await aborted.CancelAsync();
            throw new GroupUnavailableException("This member is no longer in light group 'quintet.rsm/directory'");
        });

        Assert.DoesNotContain(logs.Entries, e => e.Level >= LogLevel.Warning);
        Assert.Contains(logs.Entries, e => e.Level == LogLevel.Debug && e.Message.Contains("after its caller went away", StringComparison.Ordinal));
    }

    /// <summary>A gRPC request of one empty message, and the trailers its answer writes.</summary>
    private static (DefaultHttpContext Context, IHeaderDictionary Trailers) CallWithOneMessage(IServiceProvider services)
    {
        var context = new DefaultHttpContext { RequestServices = services };
        context.Request.ContentType = "application/grpc";
        context.Request.Body = new MemoryStream([0, 0, 0, 0, 0]);
        var trailers = new HeaderDictionary();
        context.Features.Set<Microsoft.AspNetCore.Http.Features.IHttpResponseTrailersFeature>(new TrailersFeature { Trailers = trailers });
        return (context, trailers);
    }

    private sealed class TrailersFeature : Microsoft.AspNetCore.Http.Features.IHttpResponseTrailersFeature
    {
        public IHeaderDictionary Trailers { get; set; } = new HeaderDictionary();
    }

    private sealed class ResetStream : Stream
    {
        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => false;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override void Flush() { }
        public override int Read(byte[] buffer, int offset, int count) => throw new IOException("The client reset the request stream.");
        public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) => throw new IOException("The client reset the request stream.");
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    }

    private sealed class RecordingLoggerProvider : ILoggerProvider
    {
        public List<(LogLevel Level, string Message)> Entries { get; } = [];

        public ILogger CreateLogger(string categoryName) => new Recorder(this);

        public void Dispose() { }

        private sealed class Recorder(RecordingLoggerProvider provider) : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

            public bool IsEnabled(LogLevel logLevel) => true;

            public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
            {
                lock (provider.Entries)
                {
                    provider.Entries.Add((logLevel, formatter(state, exception)));
                }
            }
        }
    }
}
