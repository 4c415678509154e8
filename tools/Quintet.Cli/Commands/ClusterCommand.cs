using System.CommandLine;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster ...</c>: look at a running cluster.</summary>
internal static class ClusterCommand
{
    public const string DefaultEndpoint = "http://127.0.0.1:5053";
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    public static Command Create(CliContext context)
    {
        var endpoint = new Option<string>("--endpoint", "-e")
        {
            Description = "The gRPC endpoint of any manager of the cluster.",
            DefaultValueFactory = _ => DefaultEndpoint,
        };
        var output = OutputFormats.CreateOption();

        var show = new Command("show", "Print the cluster's managers as one manager sees them.") { endpoint, output };
        show.SetAction((parse, cancellationToken) =>
            ShowAsync(context, parse.GetRequiredValue(endpoint), parse.GetRequiredValue(output), cancellationToken));

        return new Command("cluster", "Look at a running cluster.") { show };
    }

    private static async Task<int> ShowAsync(CliContext context, string endpoint, string output, CancellationToken cancellationToken)
    {
        if (!Uri.TryCreate(endpoint, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
        {
            return context.Fail(ExitCodes.Usage, $"--endpoint '{endpoint}' is not an http:// or https:// address (for example {DefaultEndpoint}).");
        }

        using var channel = GrpcChannel.ForAddress(uri);
        var admin = new ClusterAdmin.ClusterAdminClient(channel);
        ListManagersResponse view;
        try
        {
            view = await admin.ListManagersAsync(
                new ListManagersRequest { IncludeReports = true },
                deadline: DateTime.UtcNow + CallDeadline,
                cancellationToken: cancellationToken);
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded)
        {
            var detail = ex.StatusCode == StatusCode.DeadlineExceeded ? $"no answer within {CallDeadline.TotalSeconds:F0} s" : ex.Status.Detail;
            return context.Fail(ExitCodes.Unreachable, $"cannot reach a manager at {endpoint} ({detail}). Is it running, and is --endpoint its gRPC address?");
        }
        catch (RpcException ex)
        {
            return context.Fail(ExitCodes.Failed, $"the manager at {endpoint} refused the request: {ex.StatusCode}: {ex.Status.Detail}");
        }
        catch (OperationCanceledException)
        {
            return ExitCodes.Interrupted;
        }

        ClusterView.Write(context.Console, view, output);
        return ExitCodes.Ok;
    }
}
