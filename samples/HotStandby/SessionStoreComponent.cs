using Quintet.Components;

namespace Samples.HotStandby;

/// <summary>
/// A replica of the session table. The hot standby is these few lines: register for the state "sessions" when
/// activated, accept writes only as the primary, and hand the state to the standbys before answering.
/// </summary>
public sealed class SessionStoreComponent : Component<SessionTable>, ISessionStore
{
    private IMaintainedState? _replicas;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken) =>
        _replicas = await Context.States.RegisterAsync("sessions", cancellationToken);

    /// <inheritdoc />
    public async Task<PutReply> PutAsync(PutRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (!Replicas.IsPrimary)
        {
            return new PutReply { Accepted = false, Primary = Replicas.Members is [var primary, ..] ? primary.Key : string.Empty };
        }

        State.Sessions[request.Session] = request.Value;

        // Every standby holds the write before the client hears of it: it survives the loss of this manager.
        await Replicas.TransferAsync(cancellationToken);
        return new PutReply { Accepted = true, Primary = Context.Key };
    }

    /// <inheritdoc />
    public Task<GetReply> GetAsync(GetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        return Task.FromResult(State.Sessions.TryGetValue(request.Session, out var value)
            ? new GetReply { Found = true, Value = value }
            : new GetReply());
    }

    /// <inheritdoc />
    public Task<ReplicaStatus> StatusAsync(StatusRequest request, CancellationToken cancellationToken)
    {
        var status = new ReplicaStatus { IsPrimary = Replicas.IsPrimary, Manager = Context.Manager, Sessions = State.Sessions.Count };
        status.Replicas.AddRange(Replicas.Members.Select(m => m.Key));
        return Task.FromResult(status);
    }

    private IMaintainedState Replicas => _replicas ?? throw new InvalidOperationException("The replica is not registered yet.");
}
