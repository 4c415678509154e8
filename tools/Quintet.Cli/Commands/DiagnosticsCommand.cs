using System.CommandLine;
using System.Diagnostics;
using Google.Protobuf;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Diagnostics;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet diagnostics ...</c>: the group diagnostics of one manager (its view of the managers group, what it has in
/// flight), a round trip, and the synthetic workloads of tests and benchmarks (refused unless the manager runs with
/// <c>Quintet:Diagnostics:EnableWorkload=true</c>).
/// </summary>
internal static class DiagnosticsCommand
{
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    // A full compacting collection of a large heap takes seconds.
    private static readonly TimeSpan HeapDeadline = TimeSpan.FromSeconds(60);

    public static Command Create(CliContext context)
    {
        var group = new Option<string?>("--group") { Description = "The group; the managers group when left out (the only one a manager reports on)." };
        var status = Query(context, "group", "Print this manager's view of the managers group: view, members, delivered and sent messages, latency.", CallDeadline,
            (client, parse, deadline, token) => client.GetGroupStatusAsync(new GroupStatusRequest { Group = parse.GetValue(group) ?? "" }, deadline: deadline, cancellationToken: token).ResponseAsync, group);
        var progress = Query(context, "progress", "Print what this manager's member of the managers group still has in flight (blocked, unstable entries, waiting sends).", CallDeadline,
            (client, _, deadline, token) => client.GetGroupProgressAsync(new GroupStatusRequest(), deadline: deadline, cancellationToken: token).ResponseAsync);
        var heap = Query(context, "heap", "Run a full blocking garbage collection on the manager and print its live managed heap (it pauses the manager; needs EnableWorkload).", HeapDeadline,
            (client, _, deadline, token) => client.MeasureHeapAsync(new MeasureHeapRequest(), deadline: deadline, cancellationToken: token).ResponseAsync);
        var rawStatus = Query(context, "raw-status", "Print the raw remoting workload's counters on this manager.", CallDeadline,
            (client, _, deadline, token) => client.GetRawStatusAsync(new GroupStatusRequest(), deadline: deadline, cancellationToken: token).ResponseAsync);
        var lightStatus = Query(context, "light-status", "Print the light-group workload's counters on this manager.", CallDeadline,
            (client, _, deadline, token) => client.GetLightWorkloadStatusAsync(new GroupStatusRequest(), deadline: deadline, cancellationToken: token).ResponseAsync);

        var rate = new Option<double>("--rate") { Description = "Messages per second; 0 stops the workload.", Required = true };
        var payload = new Option<int>("--payload") { Description = "Bytes per message, at least 16.", DefaultValueFactory = _ => 64 };
        var totalFraction = new Option<double>("--total-fraction") { Description = "The fraction of messages sent in total order (the rest atomic), 0 to 1.", DefaultValueFactory = _ => 0 };
        var workload = Change(context, "workload", "Start, change or stop (--rate 0) the synthetic multicast workload in the managers group from this manager (needs EnableWorkload).",
            async (client, parse, deadline, token) =>
            {
                var request = new SetWorkloadRequest { MessagesPerSecond = parse.GetValue(rate), PayloadBytes = parse.GetValue(payload), TotalFraction = parse.GetValue(totalFraction) };
                await client.SetWorkloadAsync(request, deadline: deadline, cancellationToken: token);
                return request;
            },
            rate, payload, totalFraction);

        var rawPayload = new Option<int>("--payload") { Description = "Bytes per message.", DefaultValueFactory = _ => 64 };
        var stop = new Option<bool>("--stop") { Description = "Stop the workload." };
        var rawWorkload = Change(context, "raw-workload", "Start (or --stop) the raw Akka.NET remoting workload from this manager to every other, the multicast benchmark's peer (needs EnableWorkload).",
            async (client, parse, deadline, token) =>
            {
                var request = new SetRawWorkloadRequest { On = !parse.GetValue(stop), PayloadBytes = parse.GetValue(rawPayload) };
                await client.SetRawWorkloadAsync(request, deadline: deadline, cancellationToken: token);
                return request;
            },
            rawPayload, stop);

        var groups = new Option<string[]>("--group") { Description = "A light group to join (repeat for several); none stops the workload.", AllowMultipleArgumentsPerToken = true };
        var members = new Option<int>("--members") { Description = "Members per group hosted by this manager, 1 to 16.", DefaultValueFactory = _ => 1 };
        var lightRate = new Option<double>("--rate") { Description = "Messages per second per member, 0 to 10000; 0 keeps the members joined but quiet.", DefaultValueFactory = _ => 0 };
        var churn = new Option<bool>("--churn") { Description = "Each member leaves after 1 to 4 s and another joins in its place." };
        var lightWorkload = new Command("light-workload", "Join light groups with members hosted by this manager and send in them; no --group stops it (needs EnableWorkload).") { groups, members, lightRate, churn };
        var lightEndpoint = AdminCall.EndpointOption();
        var lightOutput = OutputFormats.CreateOption();
        lightWorkload.Options.Add(lightEndpoint);
        lightWorkload.Options.Add(lightOutput);
        lightWorkload.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(lightEndpoint), CallDeadline, async (channel, deadline) =>
        {
            var request = new SetLightWorkloadRequest { MembersPerGroup = parse.GetValue(members), MessagesPerSecond = parse.GetValue(lightRate), Churn = parse.GetValue(churn) };
            request.Groups.AddRange(parse.GetValue(groups) ?? []);
            var response = await new GroupDiagnostics.GroupDiagnosticsClient(channel).SetLightWorkloadAsync(request, deadline: deadline, cancellationToken: token);
            Print(context, parse.GetValue(lightOutput), response);
            return ExitCodes.Ok;
        }));

        var text = new Option<string?>("--text") { Description = "Text for the manager to echo back." };
        var echoEndpoint = AdminCall.EndpointOption();
        var echoOutput = OutputFormats.CreateOption();
        var echo = new Command("echo", "Make one bare gRPC round trip to the manager and print how long it took.") { text, echoEndpoint, echoOutput };
        echo.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(echoEndpoint), CallDeadline, async (channel, deadline) =>
        {
            var client = new GroupDiagnostics.GroupDiagnosticsClient(channel);
            var sent = new EchoMessage { Value = Environment.TickCount64, Text = parse.GetValue(text) ?? "" };

            // The first call opens the connection (and the TLS session): time a second one, as a ping would.
            await client.EchoAsync(sent, deadline: deadline, cancellationToken: token);
            var started = Stopwatch.GetTimestamp();
            var answer = await client.EchoAsync(sent, deadline: deadline, cancellationToken: token);
            var roundTripMs = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
            if (OutputFormats.IsJson(parse.GetValue(echoOutput)))
            {
                var node = OutputFormats.ToNode(answer);
                node["roundTripMs"] = Math.Round(roundTripMs, 3);
                OutputFormats.WriteJson(context, node);
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape($"{context.Target!.Endpoint} answered in {roundTripMs:F2} ms" + (answer.Text.Length > 0 ? $": {answer.Text}" : "")));
            return ExitCodes.Ok;
        }));

        return new Command("diagnostics", "Look into one manager's group membership; drive the synthetic workloads of tests and benchmarks.")
        {
            status, progress, echo, heap, workload, rawWorkload, rawStatus, lightWorkload, lightStatus,
        };
    }

    private static Command Query<TResponse>(
        CliContext context, string name, string description, TimeSpan callDeadline,
        Func<GroupDiagnostics.GroupDiagnosticsClient, ParseResult, DateTime, CancellationToken, Task<TResponse>> call, params Option[] options)
        where TResponse : IMessage
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var command = new Command(name, description);
        foreach (var option in options)
        {
            command.Options.Add(option);
        }

        command.Options.Add(endpoint);
        command.Options.Add(output);
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), callDeadline, async (channel, deadline) =>
        {
            var response = await call(new GroupDiagnostics.GroupDiagnosticsClient(channel), parse, deadline, token);
            Print(context, parse.GetValue(output), response);
            return ExitCodes.Ok;
        }));
        return command;
    }

    /// <summary>A command whose answer is empty: it prints what it asked for, as the manager now runs it.</summary>
    private static Command Change<TRequest>(
        CliContext context, string name, string description,
        Func<GroupDiagnostics.GroupDiagnosticsClient, ParseResult, DateTime, CancellationToken, Task<TRequest>> call, params Option[] options)
        where TRequest : IMessage
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var command = new Command(name, description);
        foreach (var option in options)
        {
            command.Options.Add(option);
        }

        command.Options.Add(endpoint);
        command.Options.Add(output);
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), CallDeadline, async (channel, deadline) =>
        {
            var applied = await call(new GroupDiagnostics.GroupDiagnosticsClient(channel), parse, deadline, token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new System.Text.Json.Nodes.JsonObject { ["applied"] = OutputFormats.ToNode(applied) });
                return ExitCodes.Ok;
            }

            FieldsView.Write(context.Console, applied, $"{name} applied on {context.Target!.Endpoint}");
            return ExitCodes.Ok;
        }));
        return command;
    }

    private static void Print(CliContext context, string? format, IMessage response)
    {
        if (OutputFormats.IsJson(format))
        {
            OutputFormats.WriteJson(context, response);
        }
        else
        {
            FieldsView.Write(context.Console, response);
        }
    }
}
