using System.Buffers;
using System.Diagnostics;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Appends a client history to a file or stream as JSON Lines, one event per line, in the shape Jepsen's histories take
/// when converted from EDN (<c>{"process":0,"type":"invoke","f":"write","key":"x","value":3,"time":1200,"index":0}</c>;
/// see docs/histories.md). Safe to call from many threads: each event is written whole, in the order of the calls.
/// </summary>
/// <remarks>
/// The order of the lines is what a checker takes as real-time order, so write an invocation before the operation is
/// sent and its completion after the answer arrives: the history then never claims an order that did not happen (it may
/// only show two operations as concurrent that were not, which a checker tolerates).
/// </remarks>
public sealed class HistoryWriter : IDisposable, IAsyncDisposable
{
    private static readonly byte[] NewLine = "\n"u8.ToArray();

    private readonly Lock _lock = new();
    private readonly Stream _stream;
    private readonly bool _leaveOpen;
    private readonly bool _autoFlush;
    private readonly ArrayBufferWriter<byte> _buffer = new(256);
    private readonly Utf8JsonWriter _json;
    private readonly long _started = Stopwatch.GetTimestamp();
    private long _nextIndex;
    private bool _disposed;

    /// <summary>Writes to a stream.</summary>
    /// <param name="stream">Where the lines go.</param>
    /// <param name="leaveOpen">Leave the stream open when the writer is disposed.</param>
    /// <param name="autoFlush">Flush the stream after every event, so that a history survives the writing process being killed.</param>
    public HistoryWriter(Stream stream, bool leaveOpen = false, bool autoFlush = false)
    {
        ArgumentNullException.ThrowIfNull(stream);
        _stream = stream;
        _leaveOpen = leaveOpen;
        _autoFlush = autoFlush;

        // Relaxed escaping keeps keys and values readable by tools that compare strings literally.
        _json = new Utf8JsonWriter(_buffer, new JsonWriterOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
    }

    /// <summary>Creates (or replaces) a file and writes to it.</summary>
    /// <param name="path">The file.</param>
    /// <param name="autoFlush">Flush the file after every event.</param>
    public HistoryWriter(string path, bool autoFlush = false)
        : this(new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read), leaveOpen: false, autoFlush)
    {
    }

    /// <summary>Nanoseconds since this writer was created, on the monotonic clock <see cref="Append"/> stamps events with.</summary>
    public long ElapsedNanoseconds => NanosecondsSince(_started);

    /// <summary>
    /// Stamps an event with <see cref="ElapsedNanoseconds"/> and the next index, and writes it; the stamping and the
    /// writing happen under one lock, so times and indices increase down the file.
    /// </summary>
    /// <param name="process">The client.</param>
    /// <param name="type">Invocation or completion.</param>
    /// <param name="function">The operation ("read", "write", "cas", ...).</param>
    /// <param name="key">The object, or null.</param>
    /// <param name="value">The argument or result.</param>
    /// <returns>The event as written.</returns>
    public HistoryEvent Append(int process, HistoryEventType type, string function, string? key, JsonNode? value)
    {
        ArgumentNullException.ThrowIfNull(function);
        lock (_lock)
        {
            var e = new HistoryEvent(process, type, function, key, value, ElapsedNanoseconds, _nextIndex);
            WriteLocked(e);
            return e;
        }
    }

    /// <summary>
    /// Records a fault the nemesis injected or healed, as Jepsen does: <c>"process":"nemesis"</c>, type <c>info</c>, for
    /// example <c>{"process":"nemesis","type":"info","f":"kill","value":["m2"],...}</c>. Readers and checkers skip these
    /// lines; they show a person when the faults happened relative to the clients' operations.
    /// </summary>
    /// <param name="function">What happened: <c>kill</c>, <c>restart</c>, <c>pause</c>, <c>resume</c>, <c>partition</c>, <c>heal</c>, ...</param>
    /// <param name="value">The targets or details, as JSON.</param>
    public void AppendNemesis(string function, JsonNode? value)
    {
        ArgumentNullException.ThrowIfNull(function);
        lock (_lock)
        {
            WriteLocked(new HistoryEvent(0, HistoryEventType.Info, function, null, value, ElapsedNanoseconds, _nextIndex), nemesis: true);
        }
    }

    /// <summary>Writes an event as it is. An event without an <see cref="HistoryEvent.Index"/> gets this writer's next one.</summary>
    /// <param name="historyEvent">The event.</param>
    public void Write(HistoryEvent historyEvent)
    {
        ArgumentNullException.ThrowIfNull(historyEvent);
        lock (_lock)
        {
            WriteLocked(historyEvent);
        }
    }

    /// <summary>Writes events in order.</summary>
    /// <param name="history">The events.</param>
    public void WriteAll(IEnumerable<HistoryEvent> history)
    {
        ArgumentNullException.ThrowIfNull(history);
        foreach (var e in history)
        {
            Write(e);
        }
    }

    /// <summary>Writes a history to a file, replacing it.</summary>
    /// <param name="path">The file.</param>
    /// <param name="history">The events.</param>
    public static void WriteFile(string path, IEnumerable<HistoryEvent> history)
    {
        using var writer = new HistoryWriter(path);
        writer.WriteAll(history);
    }

    /// <summary>Flushes what has been written to the underlying stream.</summary>
    public void Flush()
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            _stream.Flush();
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        lock (_lock)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            _json.Dispose();
            _stream.Flush();
            if (!_leaveOpen)
            {
                _stream.Dispose();
            }
        }
    }

    /// <inheritdoc />
    public ValueTask DisposeAsync()
    {
        // The stream is flushed on every line with autoFlush, and otherwise holds at most a buffer: a synchronous
        // flush under the lock is simpler than an asynchronous lock and costs little.
        Dispose();
        return ValueTask.CompletedTask;
    }

    /// <summary>The name of an event type in the file: "invoke", "ok", "fail" or "info".</summary>
    /// <param name="type">The type.</param>
    /// <returns>Its name.</returns>
    public static string TypeName(HistoryEventType type) => type switch
    {
        HistoryEventType.Invoke => "invoke",
        HistoryEventType.Ok => "ok",
        HistoryEventType.Fail => "fail",
        HistoryEventType.Info => "info",
        _ => throw new ArgumentOutOfRangeException(nameof(type), type, "Not a history event type."),
    };

    private static long NanosecondsSince(long timestamp)
    {
        var ticks = Stopwatch.GetTimestamp() - timestamp;

        // Split the conversion so that it neither overflows nor loses the sub-second part.
        var seconds = ticks / Stopwatch.Frequency;
        var rest = ticks % Stopwatch.Frequency;
        return (seconds * 1_000_000_000) + (rest * 1_000_000_000 / Stopwatch.Frequency);
    }

    private void WriteLocked(HistoryEvent e, bool nemesis = false)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        var index = e.Index ?? _nextIndex;
        _nextIndex = index + 1;

        _json.WriteStartObject();
        if (nemesis)
        {
            _json.WriteString("process"u8, "nemesis"u8);
        }
        else
        {
            _json.WriteNumber("process"u8, e.Process);
        }

        _json.WriteString("type"u8, TypeName(e.Type));
        _json.WriteString("f"u8, e.Function);
        if (e.Key is not null)
        {
            _json.WriteString("key"u8, e.Key);
        }

        _json.WritePropertyName("value"u8);
        if (e.Value is null)
        {
            _json.WriteNullValue();
        }
        else
        {
            e.Value.WriteTo(_json);
        }

        _json.WriteNumber("time"u8, e.Time);
        _json.WriteNumber("index"u8, index);
        _json.WriteEndObject();
        _json.Flush();

        _stream.Write(_buffer.WrittenSpan);
        _stream.Write(NewLine);
        _buffer.ResetWrittenCount();
        _json.Reset();
        if (_autoFlush)
        {
            _stream.Flush();
        }
    }
}
