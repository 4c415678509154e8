using System.Globalization;
using System.Text;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>
/// Registers in the shared dictionary <c>workload-registers</c> (values as decimal text) and a set whose members are
/// the keys of the shared dictionary <c>workload-set</c>. Any instance on any manager serves any key.
/// </summary>
public sealed class WorkloadTargetComponent : Component, IWorkloadTarget
{
    private ISharedDictionary? _registers;
    private ISharedDictionary? _set;

    /// <inheritdoc />
    protected override async Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _registers = await Context.Shared.DictionaryAsync("workload-registers", cancellationToken);
        _set = await Context.Shared.DictionaryAsync("workload-set", cancellationToken);
    }

    /// <inheritdoc />
    public async Task<RegisterReply> ReadAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var value = await _registers!.GetLinearizableAsync(request.Key, cancellationToken);
        return value is { } bytes ? new RegisterReply { Value = Decode(bytes), Found = true } : new RegisterReply();
    }

    /// <inheritdoc />
    public async Task<RegisterReply> WriteAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _registers!.SetAsync(request.Key, Encode(request.Value), cancellationToken);
        return new RegisterReply { Value = request.Value, Found = true, Applied = true };
    }

    /// <inheritdoc />
    public async Task<RegisterReply> CompareAndSetAsync(RegisterRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        var applied = request.ExpectAbsent
            ? await _registers!.TryAddAsync(request.Key, Encode(request.Value), cancellationToken)
            : await _registers!.TryUpdateAsync(request.Key, Encode(request.Expected), Encode(request.Value), cancellationToken);
        return new RegisterReply { Value = request.Value, Found = true, Applied = applied };
    }

    /// <inheritdoc />
    public async Task<SetReply> AddAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        await _set!.SetAsync(Member(request.Element), Encode(request.Element), cancellationToken);
        return new SetReply { Elements = [request.Element] };
    }

    /// <inheritdoc />
    public async Task<SetReply> ReadSetAsync(SetRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);

        // The dictionary does not list its keys: one linearizable read brings this replica up to every update ordered
        // before the call, and then the local replica answers for every member asked for.
        await _set!.GetLinearizableAsync(Member(0), cancellationToken);
        var reply = new SetReply { Count = _set.Count };
        for (long element = 1; element <= request.Element; element++)
        {
            if (_set.TryGet(Member(element), out var stored))
            {
                // A member stored under the wrong value is reported as that value, which the checker finds unexpected.
                reply.Elements.Add(Decode(stored));
            }
        }

        return reply;
    }

    private static string Member(long element) => element.ToString(CultureInfo.InvariantCulture);

    private static byte[] Encode(long value) => Encoding.ASCII.GetBytes(value.ToString(CultureInfo.InvariantCulture));

    private static long Decode(ReadOnlyMemory<byte> bytes) => long.Parse(Encoding.ASCII.GetString(bytes.Span), CultureInfo.InvariantCulture);
}
