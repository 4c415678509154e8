using System.Text;
using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;
using static Quintet.TestingHost.Tests.Checking.RegisterHistories;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>Histories are files other tools read: the format must be exact, and survive a round trip.</summary>
public class HistoryJsonLinesTests
{
    private static string Write(IEnumerable<HistoryEvent> history)
    {
        using var stream = new MemoryStream();
        using (var writer = new HistoryWriter(stream, leaveOpen: true))
        {
            writer.WriteAll(history);
        }

        return Encoding.UTF8.GetString(stream.ToArray());
    }

    private static List<HistoryEvent> Read(string text) => [.. HistoryReader.Read(new StringReader(text))];

    [Fact]
    public void Events_are_written_one_object_a_line_in_Jepsen_shape()
    {
        var text = Write(
        [
            new HistoryEvent(0, HistoryEventType.Invoke, "cas", "x", Cas(1, 2), 1500, 0),
            new HistoryEvent(0, HistoryEventType.Ok, "read", null, null, 2500),
        ]);
        Assert.Equal(
            """
            {"process":0,"type":"invoke","f":"cas","key":"x","value":[1,2],"time":1500,"index":0}
            {"process":0,"type":"ok","f":"read","value":null,"time":2500,"index":1}

            """,
            text);
    }

    [Fact]
    public void A_history_survives_a_round_trip()
    {
        var history = Simulate(seed: 3, operations: 200, processes: 4, keys: 3);
        var back = Read(Write(history));
        Assert.Equal(history.Count, back.Count);
        for (var i = 0; i < history.Count; i++)
        {
            Assert.Equal(history[i] with { Value = null }, back[i] with { Value = null });
            Assert.True(JsonNode.DeepEquals(history[i].Value, back[i].Value), $"line {i + 1}: {history[i].ValueJson} became {back[i].ValueJson}");
        }

        Assert.True(LinearizabilityChecker.CheckRegisters(back).IsLinearizable);
    }

    [Fact]
    public void A_history_survives_a_round_trip_through_a_file()
    {
        var path = Path.Combine(Path.GetTempPath(), $"history-{Guid.NewGuid():N}.jsonl");
        try
        {
            var history = new Builder().Write(0, 1).Read(1, 1).Events;
            HistoryWriter.WriteFile(path, history);
            Assert.Equal(history.Select(e => e.ToString()), HistoryReader.ReadFile(path).Select(e => e.ToString()));
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public async Task Concurrent_appends_are_whole_lines_with_increasing_times_and_indices()
    {
        using var stream = new MemoryStream();
        await using (var writer = new HistoryWriter(stream, leaveOpen: true))
        {
            await Task.WhenAll(Enumerable.Range(0, 8).Select(p => Task.Run(() =>
            {
                for (var i = 0; i < 500; i++)
                {
                    writer.Append(p, HistoryEventType.Invoke, "write", "k", JsonValue.Create(i));
                    writer.Append(p, HistoryEventType.Ok, "write", "k", JsonValue.Create(i));
                }
            })));
        }

        var events = Read(Encoding.UTF8.GetString(stream.ToArray()));
        Assert.Equal(8000, events.Count);
        Assert.Equal(Enumerable.Range(0, 8000).Select(i => (long?)i), events.Select(e => e.Index));
        Assert.True(events.Zip(events.Skip(1)).All(pair => pair.First.Time <= pair.Second.Time));
        Assert.True(LinearizabilityChecker.CheckRegisters(events).IsLinearizable);
    }

    [Fact]
    public void Jepsen_style_lines_are_read()
    {
        // Integer keys, extra fields, the nemesis and blank lines, as a conversion of a Jepsen history may have them.
        var events = Read(
            """
            {"index":0,"time":10,"type":"invoke","process":3,"f":"write","key":7,"value":1}
            {"index":1,"time":11,"type":"info","process":"nemesis","f":"start-partition","value":"majority"}

            {"index":2,"time":12,"type":"fail","process":3,"f":"write","key":7,"value":1,"error":"timeout"}
            """);
        Assert.Equal(2, events.Count);
        Assert.Equal(new HistoryEvent(3, HistoryEventType.Invoke, "write", "7", null, 10, 0), events[0] with { Value = null });
        Assert.Equal(HistoryEventType.Fail, events[1].Type);
        Assert.Equal(1, events[1].Value!.GetValue<long>());
    }

    [Theory]
    [InlineData("{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"", "not valid JSON")]
    [InlineData("[1,2]", "expected a JSON object")]
    [InlineData("{\"type\":\"invoke\",\"f\":\"read\"}", "\"process\" is missing")]
    [InlineData("{\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\"}", "\"process\" is \"a\"; expected an integer")]
    [InlineData("{\"process\":0,\"type\":\"done\",\"f\":\"read\"}", "\"type\" is \"done\"")]
    [InlineData("{\"process\":0,\"type\":\"ok\"}", "\"f\" is missing")]
    [InlineData("{\"process\":0,\"type\":\"ok\",\"f\":\"read\",\"key\":[1]}", "\"key\" is [1]")]
    [InlineData("{\"process\":0,\"type\":\"ok\",\"f\":\"read\",\"time\":1.5}", "\"time\" is 1.5")]
    public void A_bad_line_is_reported_with_its_number(string line, string expected)
    {
        var good = "{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}";
        var e = Assert.Throws<HistoryFormatException>(() => Read(good + "\n\n" + line + "\n"));
        Assert.Equal(3, e.LineNumber);
        Assert.StartsWith("Line 3: ", e.Message, StringComparison.Ordinal);
        Assert.Contains(expected, e.Message, StringComparison.Ordinal);
    }
}
