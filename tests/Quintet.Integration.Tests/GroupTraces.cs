using System.Diagnostics;
using System.Text.Json;
using Grpc.Core;
using Quintet.Core.Groups.Tracing;
using Quintet.Protocol.Diagnostics;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// Reads the managers' group traces for the virtual-synchrony checker. Its quiescent property (in its last view, each
/// member delivered everything sent in it by members still there) holds only of traces read while nothing is in
/// flight: read a moment too early, a manager's last total-order messages show as sent and delivered nowhere, and a
/// delivery read after its sender's trace shows a message nobody sent. A fixed wait before reading is not enough on a
/// loaded machine, so the traces are read once the managers say the group is quiet.
/// </summary>
internal static class GroupTraces
{
    /// <summary>Generous: under load a false suspicion can still cost a view change and a rejoin or two.</summary>
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(100);

    /// <summary>Every event in the folder: the managers group's, and the light groups' (<c>light-*.jsonl</c>) apart.</summary>
    public static (List<GroupTraceEvent> Managers, List<GroupTraceEvent> Light) Read(string directory)
    {
        var files = Directory.GetFiles(directory, "*.jsonl");
        var light = files.Where(f => Path.GetFileName(f).StartsWith("light-", StringComparison.Ordinal)).ToList();
        return ([.. files.Except(light).SelectMany(JsonLinesTraceSink.Read)], [.. light.SelectMany(JsonLinesTraceSink.Read)]);
    }

    /// <summary>
    /// Waits until the managers group is quiet, then reads the traces: every running manager in one view of exactly
    /// those managers, none blocked by a view change, none holding an entry that some member has not processed or a
    /// send that has not gone out, and no trace written from before those answers were asked for until after the
    /// traces were read. Every message in the traces was then delivered by each member of its view that will ever
    /// deliver it; the light groups' too, since their messages, joins and leaves are messages of the managers group.
    /// </summary>
    /// <exception cref="TimeoutException">The group was not quiet within the bound; the message says who was not.</exception>
    public static async Task<(List<GroupTraceEvent> Managers, List<GroupTraceEvent> Light)> ReadWhenQuiescentAsync(
        LocalCluster cluster, string directory, ITestOutputHelper output)
    {
        var waited = Stopwatch.StartNew();
        string? first = null;
        while (true)
        {
            var before = Lengths(directory);
            var why = await WhyNotQuiescentAsync(cluster);
            if (why is null)
            {
                try
                {
                    var traces = Read(directory);
                    if (Lengths(directory).SequenceEqual(before))
                    {
                        output.WriteLine(first is null
                            ? "managers group quiescent at the first look"
                            : $"managers group quiescent after {waited.Elapsed.TotalSeconds:F1} s; at the first look: {first}");
                        return traces;
                    }
                }
                catch (JsonException)
                {
                    // A line read while it was being written; the lengths differ too.
                }

                why = "the traces grew while they were read";
            }

            first ??= why;
            if (waited.Elapsed > Bound)
            {
                throw new TimeoutException($"The managers group was not quiescent within {Bound.TotalSeconds:F0} s. At the first look: {first}. At the last: {why}");
            }

            await Task.Delay(PollInterval);
        }
    }

    /// <summary>Null when the running managers' group is quiet; otherwise what each manager reported.</summary>
    private static async Task<string?> WhyNotQuiescentAsync(LocalCluster cluster)
    {
        var managers = cluster.Active;
        GroupProgress[] progress;
        try
        {
            progress = await Task.WhenAll(managers.Select(m => cluster.GroupProgressAsync(m)));
        }
        catch (RpcException e)
        {
            return e.Status.ToString();
        }

        var quiet = progress.All(p => p.ViewId != 0 && p.ViewId == progress[0].ViewId && p.Members.Count == managers.Count
                && !p.Blocked && p.UnstableEntries == 0 && p.WaitingSends == 0)
            && managers.All(m => progress[0].Members.Any(member => member.StartsWith(m.ClusterAddress + "#", StringComparison.Ordinal)));
        return quiet ? null : string.Join("; ", progress.Select(p =>
            $"{p.Self}: view {p.ViewId} of {p.Members.Count}{(p.Blocked ? " blocked" : string.Empty)}, {p.UnstableEntries} unstable, {p.WaitingSends} waiting"));
    }

    /// <summary>Each trace file's length: a trace is only ever appended to.</summary>
    private static List<(string File, long Length)> Lengths(string directory) =>
        [.. Directory.GetFiles(directory, "*.jsonl").Order(StringComparer.Ordinal).Select(f => (f, new FileInfo(f).Length))];
}
