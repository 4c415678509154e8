using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
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
