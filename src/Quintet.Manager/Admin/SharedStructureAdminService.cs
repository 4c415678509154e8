using System.Text;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;
using Quintet.Runtime.Structures;

namespace Quintet.Manager.Admin;

/// <summary>The shared structures this manager hosts, read-only: their figures and a page of their contents.</summary>
internal sealed class SharedStructureAdminService(SharedStructures structures, ManagerTargets targets, ManagerIdentity identity) : SharedStructureAdmin.SharedStructureAdminBase
{
    private static readonly UTF8Encoding StrictUtf8 = new(false, true);

    public override async Task<ListSharedStructuresResponse> ListSharedStructures(ListSharedStructuresRequest request, ServerCallContext context)
    {
        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            return await new SharedStructureAdmin.SharedStructureAdminClient(channel).ListSharedStructuresAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
        }

        var response = new ListSharedStructuresResponse { Manager = identity.NodeName };
        response.Structures.AddRange(structures.List().Select(s => new SharedStructureInfo
        {
            Kind = s.Kind,
            Name = s.Name,
            Durable = s.Durable,
            Ready = s.Ready,
            Entries = s.Entries,
            Bytes = s.Bytes ?? 0,
            BytesKnown = s.Bytes.HasValue,
            Leased = s.Leased,
            Position = s.Position,
        }));
        return response;
    }

    public override async Task<BrowseSharedStructureResponse> BrowseSharedStructure(BrowseSharedStructureRequest request, ServerCallContext context)
    {
        if (request.Kind is not ("dictionary" or "set" or "queue" or "counter"))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"kind '{request.Kind}' is not dictionary, set, queue or counter."));
        }

        if (string.IsNullOrWhiteSpace(request.Name))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "name is empty: name the structure ('quintet shared list' lists them)."));
        }

        var size = Paging.Size(request.PageSize);
        var after = Paging.Read(request.PageToken, 1)?[0];
        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            return await new SharedStructureAdmin.SharedStructureAdminClient(channel).BrowseSharedStructureAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
        }

        SharedStructurePage page;
        try
        {
            page = structures.Browse(request.Kind, request.Name, after, size)
                ?? throw new RpcException(new Status(StatusCode.NotFound, $"Manager {identity.NodeName} hosts no shared {request.Kind} named '{request.Name}' (a manager hosts the structures its instances opened); 'quintet shared list --manager <name>' lists what each hosts."));
        }
        catch (FormatException)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"page_token is not one this method returned for a {request.Kind}; ask again without it to start from the first page."));
        }

        var response = new BrowseSharedStructureResponse
        {
            Manager = identity.NodeName,
            Kind = request.Kind,
            Name = request.Name,
            Position = page.Position,
            Total = page.Total,
            NextPageToken = page.More && page.Entries.Count > 0 ? Paging.Token(page.Entries[^1].Key) : string.Empty,
        };
        foreach (var entry in page.Entries)
        {
            var shared = new SharedEntry { Key = entry.Key, Value = ByteString.CopyFrom(entry.Value.Span), Leased = entry.Leased };
            if (AsText(entry.Value.Span) is { } text)
            {
                shared.ValueText = text;
                shared.ValueIsText = true;
            }

            response.Entries.Add(shared);
        }

        return response;
    }

    /// <summary>The bytes as text when they are UTF-8 a person can read: no control characters but tab and line breaks.</summary>
    private static string? AsText(ReadOnlySpan<byte> value)
    {
        string text;
        try
        {
            text = StrictUtf8.GetString(value);
        }
        catch (DecoderFallbackException)
        {
            return null;
        }

        return text.Any(c => char.IsControl(c) && c is not ('\t' or '\n' or '\r')) ? null : text;
    }
}
