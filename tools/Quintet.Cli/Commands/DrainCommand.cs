using System.CommandLine;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster drain</c> and <c>drain-status</c>: move a manager's instances away before stopping it.</summary>
internal static class DrainCommand
{
    private static readonly TimeSpan StatusDeadline = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan ProgressEvery = TimeSpan.FromSeconds(1);

    public static Command CreateDrain(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var manager = new Argument<string>("manager") { Description = "The node name of the manager to drain ('quintet cluster show' lists them)." };
        var timeout = new Option<int>("--timeout") { Description = "Seconds to give the whole drain; it stops (the instances not moved yet stay) when they are over.", DefaultValueFactory = _ => 300 };
        var output = OutputFormats.CreateOption();
        var drain = new Command("drain", "Move every instance a manager owns to the other managers, one at a time, before stopping it; prints the progress.") { manager, timeout, endpoint, output };
        drain.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), TimeSpan.FromSeconds(Math.Max(1, parse.GetValue(timeout))), async (channel, deadline) =>
        {
            var admin = new ComponentAdmin.ComponentAdminClient(channel);
            var name = parse.GetRequiredValue(manager);
            var json = OutputFormats.IsJson(parse.GetValue(output));
            using var call = admin.DrainManagerAsync(new DrainManagerRequest { Manager = name }, deadline: deadline, cancellationToken: token);
            if (!json)
            {
                // The drain answers when it is done: meanwhile its progress, once a second.
                while (!call.ResponseAsync.IsCompleted && await Task.WhenAny(call.ResponseAsync, Task.Delay(ProgressEvery, token)) != call.ResponseAsync)
                {
                    var progress = await admin.GetDrainProgressAsync(new GetDrainProgressRequest { Manager = name }, deadline: DateTime.UtcNow + StatusDeadline, cancellationToken: token);
                    if (progress.Running)
                    {
                        context.Console.MarkupLine(Markup.Escape($"{name}: {progress.Moved} of {progress.Total} moved{(progress.Current.Length > 0 ? $", moving {progress.Current}" : "")}"));
                    }
                }
            }

            var response = await call.ResponseAsync;
            if (json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            Write(context, response.Progress);
            return ExitCodes.Ok;
        }));
        return drain;
    }

    public static Command CreateStatus(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var manager = new Argument<string>("manager") { Description = "The node name of the manager." };
        var output = OutputFormats.CreateOption();
        var status = new Command("drain-status", "How far a manager's running (or last) drain got.") { manager, endpoint, output };
        status.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), StatusDeadline, async (channel, deadline) =>
        {
            var progress = await new ComponentAdmin.ComponentAdminClient(channel).GetDrainProgressAsync(
                new GetDrainProgressRequest { Manager = parse.GetRequiredValue(manager) }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, progress);
                return ExitCodes.Ok;
            }

            Write(context, progress);
            return ExitCodes.Ok;
        }));
        return status;
    }

    private static void Write(CliContext context, DrainProgress progress)
    {
        var state = progress.Running ? "draining" : progress.Total == 0 && progress.ElapsedMs == 0 ? "not drained since it started" : "drained";
        context.Console.MarkupLine(Markup.Escape(
            $"{progress.Manager}: {state}: {progress.Moved} of {progress.Total} instances moved, {progress.Skipped.Count} skipped, {progress.Failed} failed{(progress.Running ? "" : $", in {progress.ElapsedMs:F0} ms")}"));
        foreach (var skipped in progress.Skipped)
        {
            context.Console.MarkupLine(Markup.Escape($"  skipped {skipped.ClassName} '{skipped.Key}': {skipped.Reason}"));
        }

        if (progress.Stopped.Length > 0)
        {
            context.Console.MarkupLine(Markup.Escape($"  {progress.Stopped}"));
        }
    }
}
