using System.Text;
using Grpc.Core;
using Quintet.Components;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Isolation;

/// <summary>
/// The worker's own service, beside its package's contracts, which only its manager calls: stop the worker, deactivate
/// one instance. The manager's side is <see cref="WorkerProcess"/>; the worker's is this invoker.
/// </summary>
internal sealed class WorkerControl(WorkerInstances instances, IHostApplicationLifetime lifetime) : IComponentInvoker
{
    /// <summary>The worker's own service, beside its package's contracts; only its manager calls it.</summary>
    public const string ControlService = "quintet.worker.Control";

    /// <summary>Stops the worker; the one-byte request is the <see cref="DeactivationReason"/> its instances get.</summary>
    public const string StopOperation = "Stop";

    /// <summary>
    /// Deactivates one instance: the key in the key header; the request is the <see cref="DeactivationReason"/> as one
    /// byte, then the class name in UTF-8.
    /// </summary>
    public const string DeactivateOperation = "Deactivate";

    /// <summary>How long the worker's instances get to deactivate when it stops.</summary>
    public static readonly TimeSpan DeactivationBudget = TimeSpan.FromSeconds(10);

    public async Task<byte[]> InvokeAsync(string service, string operation, string key, ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        if (request.Length < 1 || !Enum.IsDefined((DeactivationReason)request.Span[0]))
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"{ControlService}/{operation} starts with a deactivation reason byte.");
        }

        var reason = (DeactivationReason)request.Span[0];
        switch (operation)
        {
            case StopOperation:
                instances.StopReason = reason;

                // The server lets this call finish before it stops.
                lifetime.StopApplication();
                return [];
            case DeactivateOperation:
                await instances.DeactivateAsync(Encoding.UTF8.GetString(request.Span[1..]), key, reason, cancellationToken);
                return [];
            default:
                throw new InvocationException(StatusCode.Unimplemented, $"{ControlService} has no operation '{operation}'.");
        }
    }
}
