using Grpc.Core;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Security;

/// <summary>The audit log through the admin API (<c>quintet audit</c>).</summary>
internal sealed class AuditService(AuditLog audit) : Audit.AuditBase
{
    private const int DefaultLimit = 100;
    private const int MaxLimit = 10_000;

    public override Task<ListAuditEntriesResponse> ListAuditEntries(ListAuditEntriesRequest request, ServerCallContext context)
    {
        if (request.Limit is < 0 or > MaxLimit)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"limit must be from 1 to {MaxLimit} (0 for {DefaultLimit}); it was {request.Limit}."));
        }

        var limit = request.Limit == 0 ? DefaultLimit : request.Limit;
        return audit.ListAsync(limit, request.Since?.ToDateTimeOffset(), request.Caller, context.CancellationToken);
    }
}
