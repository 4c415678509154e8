using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>Records progress reports as they come (synchronously, unlike <see cref="Progress{T}"/>), and runs an action on each.</summary>
internal sealed class RecordingProgress(Action<StateTransferProgress>? onReport = null) : IProgress<StateTransferProgress>
{
    private readonly List<StateTransferProgress> _reports = [];
    private readonly Lock _gate = new();

    public IReadOnlyList<StateTransferProgress> Reports
    {
        get
        {
            lock (_gate)
            {
                return [.. _reports];
            }
        }
    }

    public void Report(StateTransferProgress value)
    {
        lock (_gate)
        {
            _reports.Add(value);
        }

        onReport?.Invoke(value);
    }
}
