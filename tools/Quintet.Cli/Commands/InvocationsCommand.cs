using System.CommandLine;
using System.Globalization;
using System.Text.Json.Nodes;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet component invocations &lt;class&gt; [key]</c>: the invocations of a class with debug on, one line each;
/// the recent ones every manager keeps, or with <c>--follow</c> the live ones as they come.
/// </summary>
internal static class InvocationsCommand
{
    /// <summary>The bound on reaching the manager; a followed stream runs until --count, --timeout or Ctrl+C.</summary>
    private static readonly TimeSpan ConnectDeadline = TimeSpan.FromSeconds(20);

    /// <summary>How much of a request and its response a line shows.</summary>
    public const int MessageWidth = 120;

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };
        var key = new Argument<string?>("key") { Description = "Only this instance's invocations.", Arity = ArgumentArity.ZeroOrOne };
        var follow = new Option<bool>("--follow", "-f") { Description = "Print the invocations as they happen, on every manager, until --count, --timeout or Ctrl+C." };
        var count = new Option<int>("--count", "-n") { Description = "With --follow: stop after this many invocations.", DefaultValueFactory = _ => 0 };
        var timeout = new Option<double>("--timeout") { Description = "With --follow: stop after this many seconds.", DefaultValueFactory = _ => 0 };
        var cap = new Option<int>("--max-per-second") { Description = "With --follow: at most this many invocations a second (default 200, at most 10000); those left out are counted.", DefaultValueFactory = _ => 0 };
        var command = new Command("invocations", "Print the invocations of a class whose QoS spec sets debug: true, one line each (time, manager, key, operation, status, milliseconds, request → response): the recent ones the managers keep, or with --follow the live ones. With --output json, one JSON object a line when following.")
        {
            className, key, follow, count, timeout, cap, endpoint, output,
        };
        command.SetAction((parse, token) =>
        {
            var limit = parse.GetValue(count);
            var seconds = parse.GetValue(timeout);
            var perSecond = parse.GetValue(cap);
            var following = parse.GetValue(follow);
            if (limit < 0)
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--count {limit} is negative: give the number of invocations to print, or leave it out to run until Ctrl+C."));
            }

            if (seconds < 0 || double.IsNaN(seconds) || double.IsInfinity(seconds))
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--timeout {seconds.ToString(CultureInfo.InvariantCulture)} is not a number of seconds above 0."));
            }

            if (perSecond is < 0 or > 10_000)
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--max-per-second {perSecond} is out of range: from 1 to 10000."));
            }

            if (!following && (limit > 0 || seconds > 0 || perSecond > 0))
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, "--count, --timeout and --max-per-second go with --follow; without it the command prints the recent invocations the managers keep."));
            }

            var request = new WatchInvocationsRequest { ClassName = parse.GetRequiredValue(className), Key = parse.GetValue(key) ?? string.Empty, MaxPerSecond = perSecond };
            var json = OutputFormats.IsJson(parse.GetRequiredValue(output));
            return following
                ? FollowAsync(context, parse.GetValue(endpoint), request, limit, seconds, json, token)
                : RecentAsync(context, parse.GetValue(endpoint), request, json, token);
        });
        return command;
    }

    private static Task<int> FollowAsync(CliContext context, string? endpointFlag, WatchInvocationsRequest request, int limit, double seconds, bool json, CancellationToken token) =>
        AdminCall.RunAsync(context, endpointFlag, ConnectDeadline, async (channel, _) =>
        {
            using var stop = CancellationTokenSource.CreateLinkedTokenSource(token);
            if (seconds > 0)
            {
                stop.CancelAfter(TimeSpan.FromSeconds(seconds));
            }

            using var call = new ComponentAdmin.ComponentAdminClient(channel).WatchInvocations(request, cancellationToken: stop.Token);
            var printed = 0;
            try
            {
                // The headers come once the managers subscribed: from here on, no invocation is missed.
                await call.ResponseHeadersAsync;
                context.Error.WriteLine($"Watching the invocations of {request.ClassName}{(request.Key.Length > 0 ? $" '{request.Key}'" : string.Empty)} on every manager{(limit > 0 ? $", until {limit} came" : string.Empty)}; Ctrl+C stops.");
                while ((limit == 0 || printed < limit) && await call.ResponseStream.MoveNext(stop.Token))
                {
                    Write(context, call.ResponseStream.Current, json);
                    printed++;
                }
            }
            catch (Exception e) when (stop.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
            {
                // Ctrl+C or --timeout is how a follow ends.
            }

            return ExitCodes.Ok;
        });

    /// <summary>The invocations every manager keeps for the class (its instances' recent ones), oldest first.</summary>
    private static Task<int> RecentAsync(CliContext context, string? endpointFlag, WatchInvocationsRequest request, bool json, CancellationToken token) =>
        AdminCall.RunAsync(context, endpointFlag, InstanceCommand.CallDeadline, async (channel, deadline) =>
        {
            var endpoint = context.Target!.Endpoint;
            var view = await new ClusterAdmin.ClusterAdminClient(channel).ListManagersAsync(
                new ListManagersRequest { IncludeReports = true }, deadline: deadline, cancellationToken: token);
            var list = new ListInstancesRequest { ClassName = request.ClassName };
            if (request.Key.Length > 0)
            {
                list.Keys.Add(request.Key);
            }

            var answers = await Task.WhenAll(view.Managers.Select(manager => InstanceCommand.AskAsync(context.Connection, manager, endpoint, list, token)));
            token.ThrowIfCancellationRequested();
            var events = answers
                .Where(a => a.Response is not null)
                .SelectMany(a => a.Response!.Instances.SelectMany(i => i.Recent.Select(r => new InvocationEvent { Manager = a.Manager, ClassName = i.ClassName, Key = i.Key, Record = r })))
                .OrderBy(e => e.Record.At, StringComparer.Ordinal)
                .ToList();
            if (json)
            {
                OutputFormats.WriteJson(context, new JsonObject
                {
                    ["invocations"] = new JsonArray([.. events.Select(e => OutputFormats.ToNode(e))]),
                    ["managersAnswered"] = answers.Count(a => a.Response is not null),
                    ["problems"] = new JsonArray([.. answers.Where(a => a.Problem is not null).Select(a => JsonValue.Create($"{a.Manager} {a.Problem}"))]),
                });
            }
            else
            {
                foreach (var message in events)
                {
                    Write(context, message, json: false);
                }

                if (events.Count == 0)
                {
                    context.Error.WriteLine($"No recent invocations of {request.ClassName}{(request.Key.Length > 0 ? $" '{request.Key}'" : string.Empty)}: managers keep them only for classes whose QoS spec sets debug: true ('quintet qos set'), from then on.");
                }

                foreach (var answer in answers.Where(a => a.Problem is not null))
                {
                    context.Error.WriteLine($"{answer.Manager} {answer.Problem}.");
                }
            }

            return answers.All(a => a.Response is null)
                ? context.Fail(answers.All(a => a.Unreachable) ? ExitCodes.Unreachable : ExitCodes.Failed, $"none of the {answers.Length} manager(s) that {endpoint} knows listed its instances.")
                : ExitCodes.Ok;
        });

    private static void Write(CliContext context, InvocationEvent message, bool json)
    {
        if (json)
        {
            OutputFormats.WriteJsonLine(context, message);
            return;
        }

        if (message.Dropped > 0)
        {
            context.Out.WriteLine($"... {message.Dropped} invocation(s) left out (the watch was slower than the calls, or over its --max-per-second)");
        }

        context.Out.WriteLine(Line(message));
    }

    /// <summary>One invocation on one line: time, manager, key, operation, status, milliseconds, request → response.</summary>
    public static string Line(InvocationEvent message)
    {
        ArgumentNullException.ThrowIfNull(message);
        var record = message.Record ?? new InvocationRecord();
        var at = DateTimeOffset.TryParse(record.At, CultureInfo.InvariantCulture, DateTimeStyles.None, out var instant)
            ? instant.ToString("HH:mm:ss.fff", CultureInfo.InvariantCulture)
            : record.At;
        var exchange = $"{Truncate(record.Request)} → {(record.Response.Length == 0 ? "-" : Truncate(record.Response))}";
        var state = record.State.Count == 0 ? string.Empty : "  [" + Truncate(string.Join(", ", record.State.Select(v => $"{v.Name}={v.Value}"))) + "]";
        return string.Create(CultureInfo.InvariantCulture, $"{at}  {message.Manager}  '{message.Key}'  {record.Operation}  {record.Status}  {record.ElapsedMs:F2} ms  {exchange}{state}");
    }

    private static string Truncate(string text)
    {
        var flat = text.ReplaceLineEndings(" ");
        return flat.Length <= MessageWidth ? flat : string.Concat(flat.AsSpan(0, MessageWidth - 1), "…");
    }
}
