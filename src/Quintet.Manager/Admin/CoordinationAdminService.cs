using Grpc.Core;
using Quintet.Manager.Peers;
using Quintet.Protocol.Admin;
using Quintet.Runtime.Coordination;

namespace Quintet.Manager.Admin;

/// <summary>The coordination tools this manager hosts, read-only, with what is in flight in each.</summary>
internal sealed class CoordinationAdminService(CoordinationService coordination, ManagerTargets targets, ManagerIdentity identity) : CoordinationAdmin.CoordinationAdminBase
{
    public override async Task<ListCoordinationResponse> ListCoordination(ListCoordinationRequest request, ServerCallContext context)
    {
        if (request.Kind.Length > 0 && !CoordinationOverview.Kinds.Contains(request.Kind))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"kind '{request.Kind}' is not one of {string.Join(", ", CoordinationOverview.Kinds)}."));
        }

        if (targets.ChannelFor(request.Manager) is { } channel)
        {
            return await new CoordinationAdmin.CoordinationAdminClient(channel).ListCoordinationAsync(request, deadline: ManagerTargets.Deadline(context), cancellationToken: context.CancellationToken);
        }

        var response = new ListCoordinationResponse { Manager = identity.NodeName };
        foreach (var tool in coordination.Describe().Where(t => request.Kind.Length == 0 || t.Kind == request.Kind))
        {
            var info = new CoordinationInfo
            {
                Kind = tool.Kind,
                Name = tool.Name,
                Leader = tool.Leader ?? string.Empty,
                Term = tool.Term,
                Decided = tool.Decided,
                Generation = tool.Generation,
                Stopping = tool.Stopping,
            };
            info.Replicas.AddRange(tool.Replicas);
            info.Participants.AddRange(tool.Participants);
            info.Holders.AddRange(tool.Holders.Select(Claim));
            info.Waiting.AddRange(tool.Waiting.Select(Claim));
            info.Arrived.AddRange(tool.Arrived);
            foreach (var proposal in tool.Open)
            {
                var open = new OpenProposal
                {
                    Id = proposal.Id,
                    Kind = proposal.Kind,
                    Proposer = proposal.Proposer,
                    Rule = proposal.Rule == Quintet.Components.VoteRuleKind.Quorum ? $"quorum ({proposal.K})" : proposal.Rule.ToString().ToLowerInvariant(),
                    DeadlineUnixMs = proposal.Deadline.ToUnixTimeMilliseconds(),
                };
                open.Ballots.AddRange(proposal.Ballots.Select(b => $"{b.Key}={b.State}"));
                info.Open.Add(open);
            }

            response.Tools.Add(info);
        }

        return response;
    }

    private static LockClaim Claim(LockClaimSummary claim) =>
        new() { Key = claim.Key, Mode = claim.Mode.ToString().ToLowerInvariant(), Token = claim.Token, Replica = claim.Replica };
}
