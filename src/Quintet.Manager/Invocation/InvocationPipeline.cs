using Quintet.Manager.Calls;

namespace Quintet.Manager.Invocation;

/// <summary>The rest of the pipeline after a step: the next step, or finally the <see cref="CallDispatcher"/>.</summary>
internal delegate Task<InvocationResult> InvocationDelegate(ComponentInvocation call, CancellationToken cancellationToken);

/// <summary>
/// One step every component call passes through before it is dispatched: establishing the caller, tracing, and (as they
/// come) authorization, auditing and exactly-once records. A step may refine the call, answer it itself (a refusal, a
/// recorded result) or pass it on with <c>next</c>.
/// </summary>
internal interface IInvocationStep
{
    /// <summary>Handles the call, usually by calling <paramref name="next"/>.</summary>
    Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken);
}

/// <summary>
/// The steps of <see cref="IInvocationStep"/> registered with the container, in registration order, composed once into a
/// chain that ends at the <see cref="CallDispatcher"/>. Every component call this manager receives, from a client or
/// forwarded by another manager, goes through it; a manager that forwards a call runs the steps, and so does the owner.
/// </summary>
internal sealed class InvocationPipeline
{
    private readonly InvocationDelegate _entry;

    public InvocationPipeline(IEnumerable<IInvocationStep> steps, CallDispatcher dispatcher)
    {
        InvocationDelegate next = dispatcher.DispatchAsync;
        foreach (var step in steps.Reverse())
        {
            var inner = next;
            next = (call, cancellationToken) => step.InvokeAsync(call, inner, cancellationToken);
        }

        _entry = next;
    }

    /// <summary>Runs the call through every step and dispatches it.</summary>
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, CancellationToken cancellationToken) => _entry(call, cancellationToken);
}

/// <summary>Registers the invocation pipeline and its steps.</summary>
internal static class InvocationPipelineServiceCollectionExtensions
{
    /// <summary>
    /// Registers the pipeline, its dispatcher and the steps every call passes, in this order: tracing and metrics (first,
    /// so that every call is described with its status, refusals included; nothing when nobody listens), this manager's
    /// readiness (one that cannot serve answers <c>UNAVAILABLE</c> at once), the caller's identity, its roles in the
    /// package (a refusal goes no further). A new step (auditing, exactly-once records) is registered here, in its place.
    /// </summary>
    public static IServiceCollection AddInvocationPipeline(this IServiceCollection services)
    {
        services.AddSingleton<PeerForwarding>();
        services.AddSingleton<CallStatistics>();
        services.AddSingleton<Extensions.CallObservers>();
        services.AddSingleton<Extensions.InstanceObservers>();
        services.AddSingleton<Peers.IManagerReportPart>(sp => sp.GetRequiredService<CallStatistics>());
        services.AddSingleton<CallDispatcher>();
        services.AddSingleton<IInvocationStep, CallTelemetryStep>();
        services.AddSingleton<IInvocationStep, ReadinessStep>();
        services.AddSingleton<IInvocationStep, CallerIdentityStep>();
        services.AddSingleton<IInvocationStep, ComponentRolesStep>();
        services.AddSingleton<InvocationPipeline>();
        return services;
    }
}
