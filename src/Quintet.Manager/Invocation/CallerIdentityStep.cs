using Quintet.Manager.Calls;
using Quintet.Protocol;

namespace Quintet.Manager.Invocation;

/// <summary>
/// Establishes who is calling, for the component (<c>CurrentCall.Caller</c>) and for the steps after this one. Without
/// security, the caller is the name the client claims in the <c>quintet-caller</c> header, unauthenticated; a forwarded
/// call carries the caller that the first manager established, in the same header.
/// </summary>
internal sealed class CallerIdentityStep : IInvocationStep
{
    /// <inheritdoc />
    public Task<InvocationResult> InvokeAsync(ComponentInvocation call, InvocationDelegate next, CancellationToken cancellationToken)
    {
        call.Info = call.Info with { Caller = call.Http.Request.Headers[CallHeaders.Caller].FirstOrDefault() };
        return next(call, cancellationToken);
    }
}
