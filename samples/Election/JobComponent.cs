using ProtoBuf;
using Quintet.Components;

namespace Samples.Election;

/// <summary>A worker that stands in the election <c>fenced-job</c> and runs the singleton job while it leads.</summary>
[ComponentContract("samples.election.Job")]
public interface IJob
{
    /// <summary>The job's last heartbeat (empty before the first), read linearizably.</summary>
    Task<JobRecord> LastRunAsync(LastRunRequest request, CancellationToken cancellationToken);
}

[ProtoContract] public sealed class LastRunRequest;

/// <summary>The job's heartbeat: the leader's epoch (its fencing token), its key, and when it ran.</summary>
[ProtoContract] public sealed class JobRecord
{
    [ProtoMember(1)] public long Epoch { get; set; }
    [ProtoMember(2)] public string Worker { get; set; } = "";
    [ProtoMember(3)] public DateTime At { get; set; }
}

/// <summary>
/// Every half second the leader writes its heartbeat to the shared dictionary <c>fenced-job</c>, fenced by its epoch: a
/// record of a later epoch refuses the write, so a leader cut off that has not yet learned it lost cannot overwrite its
/// successor's work (it gives up the term instead).
/// </summary>
public sealed class JobComponent : Component, IJob
{
    protected override Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) => RunWhileLeaderAsync("fenced-job", RunAsync);

    public async Task<JobRecord> LastRunAsync(LastRunRequest request, CancellationToken cancellationToken) =>
        await (await Context.Shared.DictionaryAsync<JobRecord>("fenced-job", cancellationToken)).GetLinearizableAsync("heartbeat", cancellationToken) ?? new();

    private async Task RunAsync(LeadershipTerm term, CancellationToken leading)
    {
        var records = await Context.Shared.DictionaryAsync<JobRecord>("fenced-job", leading);
        while (true)
        {
            await records.UpdateAsync("heartbeat", last => last?.Epoch > term.Epoch ? throw new StaleFencingTokenException(term.Epoch, last.Epoch) : new() { Epoch = term.Epoch, Worker = Context.Key, At = DateTime.UtcNow }, leading);
            await Task.Delay(TimeSpan.FromMilliseconds(500), leading);
        }
    }
}
