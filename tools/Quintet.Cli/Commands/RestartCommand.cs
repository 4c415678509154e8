using System.CommandLine;
using System.Diagnostics;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster restart</c>: restart a manager in its process, and follow it until it is back Up.</summary>
internal static class RestartCommand
{
    private static readonly TimeSpan AskDeadline = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan PollDeadline = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan PollEvery = TimeSpan.FromSeconds(1);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var manager = new Argument<string>("manager") { Description = "The node name of the manager to restart ('quintet cluster show' lists them)." };
        var skipDrain = new Option<bool>("--skip-drain") { Description = "Restart at once, without moving its instances to the other managers first." };
        var noWait = new Option<bool>("--no-wait") { Description = "Only ask for the restart; do not wait for the manager to be back." };
        var timeout = new Option<int>("--timeout") { Description = "Seconds to wait for the manager to be back Up (drain included); past them the command exits 3 (the restart goes on).", DefaultValueFactory = _ => 600 };
        var output = OutputFormats.CreateOption();
        var restart = new Command("restart", "Restart a manager in its process (to apply changed settings, certificates or extensions): it drains, leaves the cluster and starts again; waits until it is back Up.")
        {
            manager, skipDrain, noWait, timeout, endpoint, output,
        };
        restart.SetAction((parse, token) =>
        {
            var waitFor = TimeSpan.FromSeconds(Math.Max(1, parse.GetValue(timeout)));
            return AdminCall.RunAsync(context, parse.GetValue(endpoint), waitFor + AskDeadline, async (channel, _) =>
            {
                var name = parse.GetRequiredValue(manager);
                var json = OutputFormats.IsJson(parse.GetValue(output));
                var admin = new ClusterAdmin.ClusterAdminClient(channel);
                var started = Stopwatch.GetTimestamp();
                var accepted = await admin.RestartManagerAsync(new RestartManagerRequest { Manager = name, SkipDrain = parse.GetValue(skipDrain) }, deadline: DateTime.UtcNow + AskDeadline, cancellationToken: token);
                if (parse.GetValue(noWait))
                {
                    if (json)
                    {
                        OutputFormats.WriteJson(context, accepted);
                    }
                    else
                    {
                        context.Console.MarkupLine(Markup.Escape($"{accepted.Manager}: restart accepted ({(accepted.Drains ? "draining first" : "without a drain")}); 'quintet cluster show' shows it back Up with a new start time."));
                    }

                    return ExitCodes.Ok;
                }

                if (!json)
                {
                    context.Console.MarkupLine(Markup.Escape($"{accepted.Manager}: restart accepted ({(accepted.Drains ? "draining first" : "without a drain")})."));
                }

                var back = await FollowAsync(context, new ComponentAdmin.ComponentAdminClient(channel), admin, accepted, json, waitFor, token);
                var elapsed = Stopwatch.GetElapsedTime(started);
                if (back is null)
                {
                    return context.Fail(ExitCodes.Unreachable, $"{accepted.Manager} was not back Up with a new start time within {waitFor.TotalSeconds:F0} s; the restart goes on ('quintet cluster show' and 'quintet cluster log --manager {accepted.Manager}' show how it is).");
                }

                if (json)
                {
                    OutputFormats.WriteJson(context, new
                    {
                        manager = accepted.Manager,
                        previousStartedAt = accepted.StartedAt.ToDateTimeOffset(),
                        startedAt = back.Report.StartedAt.ToDateTimeOffset(),
                        restarts = back.Report.Restarts,
                        uid = back.Uid.ToString(System.Globalization.CultureInfo.InvariantCulture),
                        processId = back.Report.ProcessId,
                        elapsedMs = Math.Round(elapsed.TotalMilliseconds),
                    });
                }
                else
                {
                    context.Console.MarkupLine(Markup.Escape($"{accepted.Manager}: back Up in {elapsed.TotalSeconds:F1} s (started {back.Report.StartedAt.ToDateTimeOffset():u}, restart {back.Report.Restarts}, process {back.Report.ProcessId})."));
                }

                return ExitCodes.Ok;
            });
        });
        return restart;
    }

    /// <summary>
    /// The manager named <paramref name="name"/> once it is back: Up, with a start time after <paramref name="before"/>
    /// in its own report; null while it is not.
    /// </summary>
    internal static ManagerInfo? Back(ListManagersResponse view, string name, Timestamp before) =>
        view.Managers.FirstOrDefault(m =>
            m.State == ManagerState.Up
            && m.Report is { } report
            && report.NodeName == name
            && report.StartedAt is { } startedAt
            && startedAt.ToDateTimeOffset() > before.ToDateTimeOffset());

    // Reads the drain's progress while there is one, then the managers until the restarted one is back. Either may fail
    // meanwhile (the manager asked may be the one restarting): the next poll asks again.
    private static async Task<ManagerInfo?> FollowAsync(CliContext context, ComponentAdmin.ComponentAdminClient components, ClusterAdmin.ClusterAdminClient admin, RestartManagerResponse accepted, bool json, TimeSpan waitFor, CancellationToken token)
    {
        var giveUpAt = Stopwatch.GetTimestamp() + (long)(waitFor.TotalSeconds * Stopwatch.Frequency);
        var draining = accepted.Drains;
        var left = false;
        var lastProgress = string.Empty;
        while (Stopwatch.GetTimestamp() < giveUpAt)
        {
            await Task.Delay(PollEvery, token);
            try
            {
                if (draining)
                {
                    var progress = await components.GetDrainProgressAsync(new GetDrainProgressRequest { Manager = accepted.Manager }, deadline: DateTime.UtcNow + PollDeadline, cancellationToken: token);
                    var line = progress.Running
                        ? $"{accepted.Manager}: draining: {progress.Moved} of {progress.Total} moved{(progress.Current.Length > 0 ? $", moving {progress.Current}" : "")}"
                        : $"{accepted.Manager}: drained: {progress.Moved} of {progress.Total} instances moved, {progress.Skipped.Count} skipped, {progress.Failed} failed";
                    if (!json && line != lastProgress)
                    {
                        context.Console.MarkupLine(Markup.Escape(line));
                        lastProgress = line;
                    }

                    draining = progress.Running || progress.Total == 0 && progress.ElapsedMs == 0;
                }

                var view = await admin.ListManagersAsync(new ListManagersRequest { IncludeReports = true }, deadline: DateTime.UtcNow + PollDeadline, cancellationToken: token);
                if (Back(view, accepted.Manager, accepted.StartedAt) is { } back)
                {
                    return back;
                }

                if (!left && !json && !view.Managers.Any(m => m.Report?.NodeName == accepted.Manager && m.State == ManagerState.Up && m.Uid != 0 && m.Report.StartedAt.Equals(accepted.StartedAt)))
                {
                    context.Console.MarkupLine(Markup.Escape($"{accepted.Manager}: left the cluster; starting again."));
                    left = true;
                    draining = false;
                }
            }
            catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded or StatusCode.NotFound or StatusCode.Internal)
            {
                draining = false;
            }
        }

        return null;
    }
}
