using System.Globalization;
using System.Text.Json.Nodes;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// Checks a history of the persistent store (checkpoint and log), one stream per key: <c>append</c> operations whose
/// invocation value is a log record (records should be unique per key), <c>checkpoint</c> operations whose invocation
/// value names the checkpoint (unique per key; the checkpoint holds the state up to it, and the log after it starts
/// empty), and <c>read</c> operations (recovery) whose <c>ok</c> value is <c>{"checkpoint": name or null, "log": [records
/// after it]}</c>. A workload reads every key after the faults and again after a restart of the whole cluster.
/// </summary>
/// <remarks>
/// For each successful read: an append acknowledged before the read was invoked must be in its log, unless it was
/// invoked before the returned checkpoint completed (the checkpoint may hold it); the returned checkpoint must not be
/// older than one acknowledged before the read was invoked. Problems: <c>lost</c> (an acknowledged record missing),
/// <c>lost-checkpoint</c> (the read went back to an older checkpoint, or to none), <c>duplicated</c> (a record twice in
/// one log), <c>unexpected</c> (a record or checkpoint never attempted before the read completed; failed ones do not count).
/// </remarks>
public static class StoreChecker
{
    /// <summary>Checks a store history.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The verdict, naming lost, duplicated and unexpected records and checkpoints with their operations.</returns>
    /// <exception cref="HistoryFormatException">The history is not well formed, holds other functions, or a read's value has the wrong shape.</exception>
    public static CheckVerdict Check(IEnumerable<HistoryEvent> history)
    {
        var operations = CheckerSupport.Pair(history);
        var lost = new List<HistoryOperation>();
        var lostCheckpoints = new List<HistoryOperation>();
        var duplicated = new List<HistoryOperation>();
        var unexpected = new List<HistoryOperation>();
        var details = new Dictionary<string, List<string>>(StringComparer.Ordinal);
        int appends = 0, checkpoints = 0, reads = 0;

        void Note(string kind, string text)
        {
            if (!details.TryGetValue(kind, out var list))
            {
                details[kind] = list = [];
            }

            list.Add(text);
        }

        foreach (var stream in operations.GroupBy(o => o.Operation.Key ?? string.Empty))
        {
            var key = stream.Key;
            var attemptedAppends = new Dictionary<string, LinearizabilityChecker.PairedOperation>(StringComparer.Ordinal);
            var attemptedCheckpoints = new Dictionary<string, LinearizabilityChecker.PairedOperation>(StringComparer.Ordinal);
            foreach (var paired in stream)
            {
                var operation = paired.Operation;
                switch (operation.Function)
                {
                    case "append":
                        appends++;
                        if (operation.Completion?.Type != HistoryEventType.Fail)
                        {
                            attemptedAppends.TryAdd(CheckerSupport.Identity(operation.Invoke.Value), paired);
                        }

                        break;
                    case "checkpoint":
                        checkpoints++;
                        if (operation.Completion?.Type != HistoryEventType.Fail)
                        {
                            attemptedCheckpoints.TryAdd(CheckerSupport.Identity(operation.Invoke.Value), paired);
                        }

                        break;
                    case "read":
                        break;
                    default:
                        throw CheckerSupport.UnknownFunction("store", operation, "append", "checkpoint", "read");
                }
            }

            foreach (var read in stream.Where(p => p.Operation.Function == "read" && p.Operation.IsOk))
            {
                reads++;
                var operation = read.Operation;
                if (operation.Completion!.Value is not JsonObject result || result["log"] is not JsonArray log)
                {
                    throw new HistoryFormatException($"{operation}: a read's result is {{\"checkpoint\": name or null, \"log\": [records]}}.");
                }

                // The checkpoint the read recovered from, and until when it may hold appends.
                var checkpointName = result["checkpoint"];
                long coversUntil = long.MinValue;
                LinearizabilityChecker.PairedOperation? returned = null;
                if (checkpointName is not null)
                {
                    if (attemptedCheckpoints.TryGetValue(CheckerSupport.Identity(checkpointName), out var c) && c.Invoked < read.Completed)
                    {
                        returned = c;
                        coversUntil = c.Completed;
                    }
                    else
                    {
                        unexpected.Add(operation);
                        Note("unexpected", $"key {key}: checkpoint {checkpointName.ToJsonString()}");
                    }
                }

                foreach (var acknowledged in attemptedCheckpoints.Values.Where(c => c.Operation.IsOk && c.Completed < read.Invoked))
                {
                    var older = returned is null ? checkpointName is null : returned.Value.Operation.IsOk && returned.Value.Completed < acknowledged.Invoked;
                    if (older)
                    {
                        lostCheckpoints.Add(acknowledged.Operation);
                        lostCheckpoints.Add(operation);
                        Note("lost-checkpoint", $"key {key}: {acknowledged.Operation.Invoke.ValueJson} acknowledged, read recovered {checkpointName?.ToJsonString() ?? "no checkpoint"}");
                    }
                }

                var inLog = new HashSet<string>(StringComparer.Ordinal);
                foreach (var record in log)
                {
                    var id = CheckerSupport.Identity(record);
                    if (!inLog.Add(id))
                    {
                        duplicated.Add(operation);
                        Note("duplicated", $"key {key}: {id}");
                    }

                    if (!attemptedAppends.TryGetValue(id, out var a) || a.Invoked > read.Completed)
                    {
                        unexpected.Add(operation);
                        Note("unexpected", $"key {key}: record {id}");
                    }
                }

                foreach (var append in attemptedAppends.Values.Where(a => a.Operation.IsOk && a.Completed < read.Invoked))
                {
                    if (!inLog.Contains(CheckerSupport.Identity(append.Operation.Invoke.Value)) && append.Invoked >= coversUntil)
                    {
                        lost.Add(append.Operation);
                        lost.Add(operation);
                        Note("lost", $"key {key}: {append.Operation.Invoke.ValueJson}");
                    }
                }
            }
        }

        var problems = new List<CheckProblem>();
        void Report(string kind, string what, List<HistoryOperation> offending)
        {
            if (offending.Count > 0)
            {
                problems.Add(new CheckProblem(kind, $"{what}: {SetChecker.Shorten(details[kind].Distinct())}", [.. offending.Distinct()]));
            }
        }

        Report("lost", "acknowledged records missing from a later recovery", lost);
        Report("lost-checkpoint", "recoveries from a checkpoint older than one acknowledged before them", lostCheckpoints);
        Report("duplicated", "records twice in one recovered log", duplicated);
        Report("unexpected", "recovered records or checkpoints never attempted", unexpected);
        return CheckVerdict.From(
            "store",
            string.Create(CultureInfo.InvariantCulture, $"{appends} appends, {checkpoints} checkpoints, {reads} successful reads"),
            problems);
    }
}
