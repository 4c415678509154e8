using System.Diagnostics;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Quintet.Manager.Readiness;

/// <summary>
/// Readiness for the administration services that act on the cluster's components (packages, QoS, instances, component
/// roles): a manager that is cut off from the majority, removed or leaving answers <c>UNAVAILABLE</c> at once, and one
/// that is starting waits for readiness (at most <see cref="StartingWait"/> and the caller's deadline) before answering
/// <c>UNAVAILABLE</c>. A starting manager would otherwise answer from what it has loaded so far: a deployed package
/// <c>NOT_FOUND</c>, an empty list. Membership, diagnostics and the audit log answer in any state: they are how an
/// operator sees what is wrong.
/// </summary>
internal sealed class ReadinessInterceptor(ManagerReadiness readiness) : Interceptor
{
    /// <summary>How long an administrative call to a starting manager waits for it to become ready.</summary>
    internal static readonly TimeSpan StartingWait = TimeSpan.FromSeconds(30);

    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan DeadlineMargin = TimeSpan.FromMilliseconds(200);

    public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(continuation);
        await WaitUntilReadyAsync(context);
        return await continuation(request, context);
    }

    private async Task WaitUntilReadyAsync(ServerCallContext context)
    {
        var started = Stopwatch.GetTimestamp();

        // Answer before the caller's deadline, so that it hears UNAVAILABLE (and tries another manager), not a timeout.
        var wait = context.Deadline == DateTime.MaxValue ? StartingWait : context.Deadline - DateTime.UtcNow - DeadlineMargin;
        wait = wait < StartingWait ? wait : StartingWait;
        while (true)
        {
            var verdict = readiness.Current;
            if (verdict.IsReady)
            {
                return;
            }

            if (!verdict.IsStarting || Stopwatch.GetElapsedTime(started) + PollInterval > wait)
            {
                throw new RpcException(new Status(StatusCode.Unavailable, verdict.Reason));
            }

            try
            {
                await Task.Delay(PollInterval, context.CancellationToken);
            }
            catch (OperationCanceledException)
            {
                // The caller left (or its deadline passed, which the margin makes rare): it hears why the manager could not answer.
                throw new RpcException(new Status(StatusCode.Cancelled, verdict.Reason));
            }
        }
    }
}
