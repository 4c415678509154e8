using System.CommandLine;
using System.Globalization;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Cluster;
using Spectre.Console;
using ViewClient = Quintet.Protocol.Cluster.ClusterView.ClusterViewClient;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet cluster view</c>: the managers' view as clients and proxies follow it (<c>WatchManagers</c>), once or at
/// each change; what a client that cannot reach some manager is being told.
/// </summary>
internal static class ClusterViewCommand
{
    /// <summary>The bound on the first view; with --watch the stream then runs until --count or Ctrl+C.</summary>
    private static readonly TimeSpan FirstViewDeadline = TimeSpan.FromSeconds(20);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var watch = new Option<bool>("--watch", "-w") { Description = "Print the view again at each change, until --count views or Ctrl+C." };
        var count = new Option<int>("--count", "-n") { Description = "With --watch, stop after this many views (default: until Ctrl+C).", DefaultValueFactory = _ => 0 };
        var command = new Command("view", "Print the managers' view that clients and proxies follow: the managers calls may go to, with their endpoints and incarnations. With --output json, one JSON object a line.")
        {
            watch, count, endpoint, output,
        };
        command.SetAction((parse, token) =>
        {
            var views = parse.GetValue(watch) ? parse.GetValue(count) : 1;
            if (views < 0)
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"--count {views} is negative: give the number of views to print, or leave it out to run until Ctrl+C."));
            }

            var json = OutputFormats.IsJson(parse.GetRequiredValue(output));
            return AdminCall.RunAsync(context, parse.GetValue(endpoint), FirstViewDeadline, async (channel, _) =>
            {
                using var call = new ViewClient(channel).WatchManagers(new WatchManagersRequest(), cancellationToken: token);
                var printed = 0;
                try
                {
                    // The first view is bounded like any read; later ones come when the view changes.
                    using (var first = CancellationTokenSource.CreateLinkedTokenSource(token))
                    {
                        first.CancelAfter(FirstViewDeadline);
                        bool received;
                        try
                        {
                            received = await call.ResponseStream.MoveNext(first.Token);
                        }
                        catch (Exception e) when (!token.IsCancellationRequested && first.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
                        {
                            return context.Fail(ExitCodes.Unreachable, $"The manager sent no view within {FirstViewDeadline.TotalSeconds.ToString(CultureInfo.InvariantCulture)} s; it may be starting or cut off from the majority: try another manager.");
                        }

                        if (!received)
                        {
                            return context.Fail(ExitCodes.Unreachable, "The manager ended the view stream before sending a view; try another manager.");
                        }
                    }

                    do
                    {
                        Write(context, call.ResponseStream.Current, json);
                        printed++;
                    }
                    while ((views == 0 || printed < views) && await call.ResponseStream.MoveNext(token));
                }
                catch (Exception e) when (token.IsCancellationRequested && e is OperationCanceledException or RpcException { StatusCode: StatusCode.Cancelled })
                {
                    // Ctrl+C is how a watch ends.
                }

                return ExitCodes.Ok;
            });
        });
        return command;
    }

    private static void Write(CliContext context, WatchManagersResponse view, bool json)
    {
        if (json)
        {
            OutputFormats.WriteJsonLine(context, view);
            return;
        }

        var table = new Table()
            .Title($"view {view.ViewId.ToString(CultureInfo.InvariantCulture)}, as {Markup.Escape(view.AnsweredBy)} sees it")
            .AddColumns("manager", "endpoint", "cluster address", "uid", "incarnation");
        foreach (var manager in view.Managers)
        {
            table.AddRow(
                Markup.Escape(manager.NodeName),
                Markup.Escape(manager.Endpoint),
                Markup.Escape(manager.Address),
                manager.Uid.ToString(CultureInfo.InvariantCulture),
                manager.Incarnation.ToString(CultureInfo.InvariantCulture));
        }

        context.Console.Write(table);
    }
}
