using System.Text.Json;
using System.Text.Json.Serialization;

namespace Quintet.Core.Groups.Tracing;

/// <summary>
/// Writes a member's trace as JSON Lines, one event per line, handing each line to the operating system before the
/// event takes effect: a process killed with SIGKILL loses none of what it recorded. The format is documented in
/// docs/virtual-synchrony.md.
/// </summary>
public sealed class JsonLinesTraceSink : IGroupTraceSink, IDisposable
{
    private readonly Lock _gate = new();
    private readonly FileStream _file;
    private readonly Utf8JsonWriter _writer;

    /// <summary>Opens (appending) the trace file at <paramref name="path"/>.</summary>
    public JsonLinesTraceSink(string path)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
        _file = new FileStream(path, FileMode.Append, FileAccess.Write, FileShare.Read, bufferSize: 1);
        _writer = new Utf8JsonWriter(_file);
    }

    /// <summary>The JSON options that read a trace line back into a <see cref="GroupTraceEvent"/>.</summary>
    public static JsonSerializerOptions ReadOptions { get; } = new(JsonSerializerDefaults.Web)
    {
        Converters = { new JsonStringEnumConverter(JsonNamingPolicy.CamelCase) },
    };

    /// <summary>Reads every event of a trace file written by this sink.</summary>
    public static IEnumerable<GroupTraceEvent> Read(string path)
    {
        foreach (var line in File.ReadLines(path))
        {
            if (!string.IsNullOrWhiteSpace(line))
            {
                yield return JsonSerializer.Deserialize<GroupTraceEvent>(line, ReadOptions)
                    ?? throw new InvalidDataException($"Empty trace line in {path}.");
            }
        }
    }

    /// <inheritdoc />
    public void Record(GroupTraceEvent traceEvent)
    {
        ArgumentNullException.ThrowIfNull(traceEvent);
        lock (_gate)
        {
            _writer.Reset();
            _writer.WriteStartObject();
            _writer.WriteString("group", traceEvent.Group);
            _writer.WriteString("member", traceEvent.Member);
            _writer.WriteString("kind", traceEvent.Kind switch
            {
                GroupTraceKind.Install => "install",
                GroupTraceKind.Send => "send",
                GroupTraceKind.Leave => "leave",
                _ => "deliver",
            });
            _writer.WriteNumber("viewId", traceEvent.ViewId);
            if (traceEvent.Members is { } members)
            {
                _writer.WriteStartArray("members");
                foreach (var member in members)
                {
                    _writer.WriteStringValue(member);
                }

                _writer.WriteEndArray();
            }

            if (traceEvent.Sender is { } sender)
            {
                _writer.WriteString("sender", sender);
                _writer.WriteNumber("sequence", traceEvent.Sequence);
                _writer.WriteString("messageId", traceEvent.MessageId);
            }

            if (traceEvent.To is { } to)
            {
                _writer.WriteStartArray("to");
                foreach (var member in to)
                {
                    _writer.WriteStringValue(member);
                }

                _writer.WriteEndArray();
            }

            if (traceEvent.Founded)
            {
                _writer.WriteBoolean("founded", true);
            }

            if (traceEvent.Ordering is { } ordering)
            {
                _writer.WriteString("ordering", ordering == MessageOrdering.Total ? "total" : "atomic");
            }

            _writer.WriteEndObject();
            _writer.Flush();
            _file.WriteByte((byte)'\n');
            _file.Flush();
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        _writer.Dispose();
        _file.Dispose();
    }
}
