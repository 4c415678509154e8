using ProtoBuf;
using Quintet.Components;

namespace Samples.Election;

/// <summary>A worker: it stands in the election <c>singleton-job</c> when activated, and runs the job while it leads.</summary>
[ComponentContract("samples.election.Worker")]
public interface IWorker
{
    /// <summary>Where the worker stands: its manager, whether it leads, in which epoch, and how often it ran the job.</summary>
    Task<WorkerStatus> StatusAsync(StatusRequest request, CancellationToken cancellationToken);
}

/// <summary>Asks for a worker's status.</summary>
[ProtoContract]
public sealed class StatusRequest
{
}

/// <summary>A worker's view of the election and of the job.</summary>
[ProtoContract]
public sealed class WorkerStatus
{
    /// <summary>The worker's key.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>The manager hosting it.</summary>
    [ProtoMember(2)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Whether it leads now.</summary>
    [ProtoMember(3)]
    public bool IsLeader { get; set; }

    /// <summary>The epoch of the current leadership as it knows it.</summary>
    [ProtoMember(4)]
    public long Epoch { get; set; }

    /// <summary>The leader's key as it knows it.</summary>
    [ProtoMember(5)]
    public string Leader { get; set; } = string.Empty;

    /// <summary>How many times it ran the job.</summary>
    [ProtoMember(6)]
    public long JobRuns { get; set; }

    /// <summary>Every change it learned, in order, as <c>epoch:leader</c>.</summary>
    [ProtoMember(7)]
    public List<string> Changes { get; set; } = [];

    /// <summary>The job's last record in the shared dictionary: <c>epoch|worker|run</c>.</summary>
    [ProtoMember(8)]
    public string LastJobRecord { get; set; } = string.Empty;

    /// <summary>The job's last failure, if any.</summary>
    [ProtoMember(9)]
    public string LastJobError { get; set; } = string.Empty;
}
