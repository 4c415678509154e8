using System.Security.Cryptography;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Quintet.Persistence;
using Quintet.Protocol;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Security;

/// <summary>
/// Records the administrative calls of the services it is added to: an action that changes something is written to the
/// audit log before it runs (and refused with UNAVAILABLE, having done nothing, when it cannot be) and its outcome after;
/// a read-only call is recorded only when refused (PERMISSION_DENIED, UNAUTHENTICATED).
/// </summary>
internal sealed class AuditInterceptor(AuditLog audit) : Interceptor
{
    /// <summary>Longest target text kept in an entry: a QoS spec or a request may be long, the log keeps its start.</summary>
    private const int MaxTargetLength = 2000;

    /// <summary>How long an action waits for the audit log's store to take its STARTED entry.</summary>
    private static readonly TimeSpan StoreWait = TimeSpan.FromSeconds(15);

    /// <inheritdoc />
    public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        var action = context.Method.TrimStart('/');
        var changes = !IsReadOnly(action);

        // A read-only call is described only when it is refused: reads and echoes are frequent, and writing each request
        // out as JSON for an entry that is then dropped would tax every one of them.
        var entry = changes ? Describe(request, context, action) : null;
        if (entry is not null)
        {
            var started = entry.Clone();
            started.Result = "STARTED";
            await RecordStartAsync(started, action, context);
        }

        try
        {
            var response = await continuation(request, context);
            if (entry is not null)
            {
                entry.Result = "OK";
                if (response is DeployPackageResponse deployed)
                {
                    entry.Target = $"package {deployed.Package.Name} {deployed.Package.Version}";
                }

                await audit.TryWriteAsync(entry);
            }

            return response;
        }
        catch (RpcException e) when (changes || e.StatusCode is StatusCode.PermissionDenied or StatusCode.Unauthenticated)
        {
            entry ??= Describe(request, context, action);
            entry.Result = e.StatusCode.ToString();
            entry.Message = e.Status.Detail;
            await audit.TryWriteAsync(entry);
            throw;
        }
        catch (Exception e) when (entry is not null && e is not RpcException)
        {
            entry.Result = e is OperationCanceledException ? nameof(StatusCode.Cancelled) : nameof(StatusCode.Internal);
            entry.Message = e.Message;
            await audit.TryWriteAsync(entry);
            throw;
        }
    }

    /// <summary>
    /// Writes the STARTED entry, waiting out a store that is briefly without a majority (a manager starting, a view
    /// changing) for at most <see cref="StoreWait"/> or the call's deadline, then refuses with UNAVAILABLE.
    /// </summary>
    private async Task RecordStartAsync(AuditEntry started, string action, ServerCallContext context)
    {
        var giveUpAt = DateTime.UtcNow + StoreWait;
        if (context.Deadline < giveUpAt)
        {
            giveUpAt = context.Deadline;
        }

        for (var pause = TimeSpan.FromMilliseconds(100); ; pause = TimeSpan.FromTicks(Math.Min(pause.Ticks * 2, TimeSpan.FromSeconds(1).Ticks)))
        {
            try
            {
                await audit.WriteAsync(started, context.CancellationToken);
                return;
            }
            catch (CheckpointStoreException e)
            {
                if (DateTime.UtcNow + pause >= giveUpAt)
                {
                    audit.ReportRefusedUnrecorded(started, e);
                    throw new RpcException(new Status(StatusCode.Unavailable,
                        $"Nothing was done: the audit log could not record {action} ({e.Message}). Administrative actions are recorded before they run; try again once the checkpoint store is back."));
                }
            }

            await Task.Delay(pause, context.CancellationToken);
        }
    }

    /// <summary>Read-only methods by name: lists, reads, watches and exports change nothing and are recorded only when refused.</summary>
    internal static bool IsReadOnly(string action)
    {
        var method = action[(action.LastIndexOf('/') + 1)..];
        return method.StartsWith("List", StringComparison.Ordinal) || method.StartsWith("Get", StringComparison.Ordinal)
            || method.StartsWith("Watch", StringComparison.Ordinal) || method.StartsWith("Export", StringComparison.Ordinal) || method == "Echo";
    }

    /// <summary>Who called, from where, and what about; the caller is whom authentication established, if anyone.</summary>
    internal static AuditEntry Describe(object request, ServerCallContext context, string action)
    {
        var user = context.GetHttpContext().User;
        var authenticated = user.Identity?.IsAuthenticated == true;
        var entry = new AuditEntry
        {
            Caller = authenticated ? user.Identity!.Name ?? "" : context.RequestHeaders.GetValue(CallHeaders.Caller) ?? "anonymous",
            Authenticated = authenticated,
            Peer = context.Peer ?? "",
            Action = action,
        };
        if (request is DeployPackageRequest deploy)
        {
            entry.Target = $"package zip of {deploy.PackageZip.Length} bytes";
            entry.PackageSha256 = Convert.ToHexStringLower(SHA256.HashData(deploy.PackageZip.Span));
        }
        else if (request is IMessage message)
        {
            var text = JsonFormatter.Default.Format(message);
            entry.Target = text.Length <= MaxTargetLength ? text : text[..MaxTargetLength] + "...";
        }

        return entry;
    }
}
