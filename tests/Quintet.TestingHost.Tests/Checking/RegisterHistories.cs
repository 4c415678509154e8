using System.Text.Json.Nodes;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Tests.Checking;

/// <summary>Builds register histories: by hand, and from a simulated linearizable register with random concurrency.</summary>
internal static class RegisterHistories
{
    public static JsonNode? Value(long? v) => v is { } n ? JsonValue.Create(n) : null;

    public static JsonArray Cas(long? expected, long? replacement) => [Value(expected), Value(replacement)];

    /// <summary>A history written event by event, each stamped with its position.</summary>
    public sealed class Builder
    {
        private readonly List<HistoryEvent> _events = [];

        public IReadOnlyList<HistoryEvent> Events => _events;

        public Builder Add(int process, HistoryEventType type, string f, JsonNode? value, string? key = "x")
        {
            _events.Add(new HistoryEvent(process, type, f, key, value, _events.Count * 1000L, _events.Count));
            return this;
        }

        public Builder Invoke(int p, string f, JsonNode? value = null, string? key = "x") => Add(p, HistoryEventType.Invoke, f, value, key);

        public Builder Ok(int p, string f, JsonNode? value = null, string? key = "x") => Add(p, HistoryEventType.Ok, f, value, key);

        public Builder Fail(int p, string f, JsonNode? value = null, string? key = "x") => Add(p, HistoryEventType.Fail, f, value, key);

        public Builder Info(int p, string f, JsonNode? value = null, string? key = "x") => Add(p, HistoryEventType.Info, f, value, key);

        /// <summary>A write that completes before anything else starts.</summary>
        public Builder Write(int p, long v, string key = "x") => Invoke(p, "write", Value(v), key).Ok(p, "write", Value(v), key);

        /// <summary>A read that completes before anything else starts.</summary>
        public Builder Read(int p, long? v, string key = "x") => Invoke(p, "read", null, key).Ok(p, "read", Value(v), key);

        public Builder CasOk(int p, long? expected, long? replacement, string key = "x") =>
            Invoke(p, "cas", Cas(expected, replacement), key).Ok(p, "cas", Cas(expected, replacement), key);
    }

    /// <summary>
    /// Runs random clients against one true register per key. Each operation takes effect at a random instant between
    /// its invocation and its completion, so the history is linearizable by construction. Some operations fail before
    /// taking effect, some end in info before or after taking effect (the client then continues as a new process, as
    /// in Jepsen), and some are still outstanding when the history ends. Written values are unique and positive.
    /// </summary>
    public static List<HistoryEvent> Simulate(int seed, int operations, int processes, int keys, double indeterminateRate = 0.03)
    {
        var random = new Random(seed);
        var registers = new long?[keys];
        var written = Enumerable.Range(0, keys).Select(_ => new List<long>()).ToArray();
        var clients = new Client?[processes];
        var processIds = Enumerable.Range(0, processes).ToArray();
        var events = new List<HistoryEvent>();
        long nextValue = 1;
        var invoked = 0;

        void Emit(int process, HistoryEventType type, string f, int key, JsonNode? value) =>
            events.Add(new HistoryEvent(process, type, f, "k" + key, value, events.Count * 10L, events.Count));

        while (invoked < operations || clients.Any(c => c is not null))
        {
            var slot = random.Next(processes);
            var process = processIds[slot];
            var client = clients[slot];
            if (client is null)
            {
                if (invoked == operations)
                {
                    continue;
                }

                invoked++;
                var key = random.Next(keys);
                var roll = random.NextDouble();
                if (roll < 0.45)
                {
                    clients[slot] = new Client("read", key, null, null);
                    Emit(process, HistoryEventType.Invoke, "read", key, null);
                }
                else if (roll < 0.8)
                {
                    var v = nextValue++;
                    clients[slot] = new Client("write", key, v, null);
                    Emit(process, HistoryEventType.Invoke, "write", key, Value(v));
                }
                else
                {
                    // Expect the current value half the time, so that both outcomes of a cas are common.
                    long? expected = random.Next(2) == 0 || written[key].Count == 0 ? registers[key] : written[key][random.Next(written[key].Count)];
                    var v = nextValue++;
                    clients[slot] = new Client("cas", key, v, expected);
                    Emit(process, HistoryEventType.Invoke, "cas", key, Cas(expected, v));
                }

                continue;
            }

            var input = client.F == "cas" ? Cas(client.Expected, client.Value) : client.F == "write" ? Value(client.Value) : null;
            if (invoked == operations && random.NextDouble() < 0.02)
            {
                // Left outstanding: the history ends without its completion.
                clients[slot] = null;
                continue;
            }

            if (!client.Applied)
            {
                var roll = random.NextDouble();
                if (roll < indeterminateRate)
                {
                    // Timed out before it took effect.
                    Emit(process, HistoryEventType.Info, client.F, client.Key, input);
                    clients[slot] = null;
                    processIds[slot] += processes;
                }
                else if (roll < 2 * indeterminateRate && client.F != "read")
                {
                    Emit(process, HistoryEventType.Fail, client.F, client.Key, input);
                    clients[slot] = null;
                }
                else if (roll < 0.6)
                {
                    // The linearization point.
                    switch (client.F)
                    {
                        case "read":
                            client.Result = registers[client.Key];
                            client.Succeeded = true;
                            break;
                        case "write":
                            registers[client.Key] = client.Value;
                            written[client.Key].Add(client.Value!.Value);
                            client.Succeeded = true;
                            break;
                        default:
                            client.Succeeded = registers[client.Key] == client.Expected;
                            if (client.Succeeded)
                            {
                                registers[client.Key] = client.Value;
                                written[client.Key].Add(client.Value!.Value);
                            }

                            break;
                    }

                    client.Applied = true;
                }

                continue;
            }

            if (random.NextDouble() < indeterminateRate && client.Succeeded)
            {
                // Took effect, but the reply was lost.
                Emit(process, HistoryEventType.Info, client.F, client.Key, input);
                processIds[slot] += processes;
            }
            else if (!client.Succeeded)
            {
                Emit(process, HistoryEventType.Fail, client.F, client.Key, input);
            }
            else
            {
                Emit(process, HistoryEventType.Ok, client.F, client.Key, client.F == "read" ? Value(client.Result) : input);
            }

            clients[slot] = null;
        }

        return events;
    }

    private sealed class Client(string f, int key, long? value, long? expected)
    {
        public string F { get; } = f;

        public int Key { get; } = key;

        public long? Value { get; } = value;

        public long? Expected { get; } = expected;

        public bool Applied { get; set; }

        public bool Succeeded { get; set; }

        public long? Result { get; set; }
    }
}
