using Quintet.Components;

namespace Quintet.Integration.Tests.Crasher;

/// <summary>One per key; logs each echo to its checkpoint stream, so that a new process picks up the count.</summary>
public sealed class CrasherComponent : Component, ICrasher
{
    private long _calls;
    private long _callsHere;

    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        var recovery = await Context.Checkpoints.RecoverAsync(cancellationToken);
        _calls = recovery.Log.Count;
    }

    public async Task<EchoReply> EchoAsync(EchoRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await Context.Checkpoints.AppendAsync(new byte[] { 1 }, cancellationToken);
        _calls++;
        _callsHere++;
        return new EchoReply { Text = request.Text, ProcessId = Environment.ProcessId, Calls = _calls, CallsHere = _callsHere, Manager = Context.Manager };
    }

    public Task<EchoReply> RefuseAsync(EchoRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        throw new ComponentFaultException(ComponentFault.FailedPrecondition, $"refused: {request.Text}");
    }

    public Task<EchoReply> CrashAsync(EchoRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        Environment.FailFast($"Crasher asked to crash: {request.Text}");
        return Task.FromResult(new EchoReply());
    }
}
