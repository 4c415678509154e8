using Grpc.Core;
using Microsoft.Extensions.Options;
using Quintet.Core.Groups;
using Quintet.Protocol.Diagnostics;

namespace Quintet.Manager.Diagnostics;

/// <summary>Settings of the diagnostics endpoints, bound from <c>Quintet:Diagnostics</c>.</summary>
public sealed class DiagnosticsOptions
{
    /// <summary>The configuration section these options are bound from.</summary>
    public const string SectionName = "Quintet:Diagnostics";

    /// <summary>
    /// Allows the synthetic multicast workload (<c>SetWorkload</c>), for tests and benchmarks only.
    /// <value>Default: false.</value>
    /// </summary>
    public bool EnableWorkload { get; set; }
}

/// <summary>The group diagnostics API.</summary>
internal sealed class GroupDiagnosticsService(
    ManagersGroupMonitor monitor,
    GroupWorkload workload,
    RawRemotingWorkload raw,
    LightGroupWorkload light,
    IOptions<DiagnosticsOptions> options) : GroupDiagnostics.GroupDiagnosticsBase
{
    /// <summary>A busy actor answers within milliseconds; a stopped one never does.</summary>
    private static readonly TimeSpan ProgressTimeout = TimeSpan.FromSeconds(2);

    public override Task<GroupStatus> GetGroupStatus(GroupStatusRequest request, ServerCallContext context)
    {
        if (request.Group.Length > 0 && request.Group != GroupService.ManagersGroup)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"This manager is in no group '{request.Group}'; it knows '{GroupService.ManagersGroup}'."));
        }

        var group = monitor.Group;
        var view = group.View;
        var (p50, p99) = monitor.TakeLatency();
        var status = new GroupStatus
        {
            Group = group.Name,
            ViewId = view?.Id ?? 0,
            Self = group.Self.ToString(),
            InPrimary = group.InPrimary,
            Delivered = monitor.Delivered,
            Sent = workload.Sent,
            Refused = workload.Refused,
            ViewsInstalled = monitor.ViewsInstalled,
            LatencyP50Ms = p50,
            LatencyP99Ms = p99,
            LastSuspicionTimestamp = group.LastChange.Suspected,
            LastInstallTimestamp = group.LastChange.Installed,
            PendingSuspicionTimestamp = group.PendingSuspicionTimestamp,
        };
        if (view is not null)
        {
            status.Members.AddRange(view.Members.Select(m => m.ToString()));
        }

        return Task.FromResult(status);
    }

    public override async Task<GroupProgress> GetGroupProgress(GroupStatusRequest request, ServerCallContext context)
    {
        if (request.Group.Length > 0 && request.Group != GroupService.ManagersGroup)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"This manager is in no group '{request.Group}'; it knows '{GroupService.ManagersGroup}'."));
        }

        var group = monitor.Group;
        GroupMemberProgress progress;
        try
        {
            progress = await group.GetProgressAsync(ProgressTimeout, context.CancellationToken);
        }
        catch (Akka.Actor.AskTimeoutException)
        {
            throw new RpcException(new Status(StatusCode.Unavailable, $"The group actor did not answer within {ProgressTimeout.TotalSeconds:F0} s."));
        }

        var status = new GroupProgress
        {
            Self = group.Self.ToString(),
            ViewId = progress.View?.Id ?? 0,
            Blocked = progress.Blocked,
            UnstableEntries = progress.UnstableEntries,
            WaitingSends = progress.WaitingSends,
        };
        if (progress.View is { } view)
        {
            status.Members.AddRange(view.Members.Select(m => m.ToString()));
        }

        return status;
    }

    public override Task<SetWorkloadResponse> SetWorkload(SetWorkloadRequest request, ServerCallContext context)
    {
        if (!options.Value.EnableWorkload)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, "The synthetic workload is off; start the manager with Quintet:Diagnostics:EnableWorkload=true to use it."));
        }

        if (request.MessagesPerSecond is < 0 or > 1_000_000 || double.IsNaN(request.MessagesPerSecond))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"messages_per_second must be between 0 and 1000000, not {request.MessagesPerSecond}."));
        }

        if (request.PayloadBytes is < 0 or > 1 << 20)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"payload_bytes must be between 16 and 1048576, not {request.PayloadBytes}."));
        }

        if (request.TotalFraction is < 0 or > 1 || double.IsNaN(request.TotalFraction))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"total_fraction must be between 0 and 1, not {request.TotalFraction}."));
        }

        workload.Set(request.MessagesPerSecond, request.PayloadBytes, request.TotalFraction);
        return Task.FromResult(new SetWorkloadResponse());
    }

    public override Task<SetWorkloadResponse> SetRawWorkload(SetRawWorkloadRequest request, ServerCallContext context)
    {
        if (!options.Value.EnableWorkload)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, "The synthetic workload is off; start the manager with Quintet:Diagnostics:EnableWorkload=true to use it."));
        }

        raw.Set(request.On, Math.Clamp(request.PayloadBytes, 1, 1 << 20));
        return Task.FromResult(new SetWorkloadResponse());
    }

    public override async Task<LightWorkloadStatus> SetLightWorkload(SetLightWorkloadRequest request, ServerCallContext context)
    {
        RequireWorkloadEnabled();
        if (request.Groups.Count > 0 && request.MembersPerGroup is < 1 or > 16)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"members_per_group must be between 1 and 16, not {request.MembersPerGroup}."));
        }

        if (request.MessagesPerSecond is < 0 or > 10_000 || double.IsNaN(request.MessagesPerSecond))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"messages_per_second must be between 0 and 10000, not {request.MessagesPerSecond}."));
        }

        if (request.Groups.Any(string.IsNullOrWhiteSpace))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "A light group name must not be empty."));
        }

        await light.SetAsync([.. request.Groups], request.MembersPerGroup, request.MessagesPerSecond, request.Churn);
        return LightStatus();
    }

    public override Task<EchoMessage> Echo(EchoMessage request, ServerCallContext context) => Task.FromResult(request);

    public override Task<MeasureHeapResponse> MeasureHeap(MeasureHeapRequest request, ServerCallContext context)
    {
        RequireWorkloadEnabled();
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Aggressive, blocking: true, compacting: true);
        GC.WaitForPendingFinalizers();
        return Task.FromResult(new MeasureHeapResponse { LiveHeapBytes = GC.GetTotalMemory(forceFullCollection: true) });
    }

    public override Task<LightWorkloadStatus> GetLightWorkloadStatus(GroupStatusRequest request, ServerCallContext context) =>
        Task.FromResult(LightStatus());

    private LightWorkloadStatus LightStatus() =>
        new() { Joined = light.Joined, Sent = light.Sent, Refused = light.Refused, Delivered = light.Delivered };

    private void RequireWorkloadEnabled()
    {
        if (!options.Value.EnableWorkload)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, "The synthetic workload is off; start the manager with Quintet:Diagnostics:EnableWorkload=true to use it."));
        }
    }

    public override Task<RawStatus> GetRawStatus(GroupStatusRequest request, ServerCallContext context) =>
        Task.FromResult(new RawStatus { Received = raw.Received, Sent = raw.Sent });
}
