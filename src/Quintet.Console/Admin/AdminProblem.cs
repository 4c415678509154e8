using System.Text;
using Grpc.Core;
using Quintet.AdminClient;

namespace Quintet.Console.Admin;

/// <summary>What the console shows for a failed admin call: the gRPC status and the manager's message.</summary>
public static class AdminProblem
{
    /// <summary>The status code as gRPC names it: <c>PERMISSION_DENIED</c>.</summary>
    public static string StatusName(StatusCode code)
    {
        var name = code.ToString();
        var builder = new StringBuilder(name.Length + 4);
        for (var i = 0; i < name.Length; i++)
        {
            if (i > 0 && char.IsUpper(name[i]))
            {
                builder.Append('_');
            }

            builder.Append(char.ToUpperInvariant(name[i]));
        }

        return builder.ToString();
    }

    /// <summary>The failure in one line: <c>PERMISSION_DENIED: 'bob' needs the role admin ...</c>.</summary>
    public static string Describe(Exception exception)
    {
        ArgumentNullException.ThrowIfNull(exception);
        return exception switch
        {
            RpcException e when AdminChannels.IsTlsFailure(e) => $"{StatusName(e.StatusCode)}: the TLS handshake with the manager failed ({AdminChannels.InnermostMessage(e)}). Is the console's --ca the cluster's CA certificate?",
            RpcException { StatusCode: StatusCode.Unavailable } e => $"UNAVAILABLE: no manager answered ({(string.IsNullOrEmpty(e.Status.Detail) ? AdminChannels.InnermostMessage(e) : e.Status.Detail)}).",
            RpcException { StatusCode: StatusCode.DeadlineExceeded } => "DEADLINE_EXCEEDED: the manager did not answer in time.",
            RpcException e => $"{StatusName(e.StatusCode)}: {e.Status.Detail}",
            OperationCanceledException => "Cancelled.",
            _ => exception.Message,
        };
    }
}
