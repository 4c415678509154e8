using System.CommandLine;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Cli.Configuration;
using Quintet.Security;

namespace Quintet.Cli.Commands;

/// <summary>The endpoint option and the error handling every command that calls a manager shares.</summary>
internal static class AdminCall
{
    public const string DefaultEndpoint = CliTarget.DefaultEndpoint;

    public static Option<string?> EndpointOption() => new("--endpoint", "-e")
    {
        Description = $"The gRPC endpoint of any manager of the cluster (https://... for a secured cluster, with --ca). Default: ${CliEnvironment.Endpoint}, else the saved context's, else {DefaultEndpoint}.",
    };

    /// <summary>
    /// Resolves the command's target (<see cref="CliTarget.Resolve"/>) and runs <paramref name="call"/> against it,
    /// turning failures into exit codes and messages: the gRPC status of a refusal is mapped as docs/cli.md lists.
    /// </summary>
    public static async Task<int> RunAsync(CliContext context, string? endpointFlag, TimeSpan deadline, Func<GrpcChannel, DateTime, Task<int>> call)
    {
        CliTarget target;
        try
        {
            target = CliTarget.Resolve(context.Settings, endpointFlag);
        }
        catch (CliConfigException ex)
        {
            return context.Fail(ExitCodes.Config, ex.Message);
        }
        catch (CliProblem ex)
        {
            return context.Fail(ex.ExitCode, ex.Message);
        }

        var endpoint = target.Endpoint;
        var from = target.EndpointSource == "--endpoint" ? "" : $" (from {target.EndpointSource})";
        if (!Uri.TryCreate(endpoint, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
        {
            return context.Fail(ExitCodes.Usage, $"--endpoint '{endpoint}'{from} is not an http:// or https:// address (for example {DefaultEndpoint}).");
        }

        context.Target = target;
        context.Connection = target.Connection;
        if (context.Connection.Check(uri) is { } wrong)
        {
            return context.Fail(ExitCodes.Usage, target.ContextName is { } name ? $"{wrong} (context '{name}')" : wrong);
        }

        GrpcChannel channel;
        try
        {
            channel = context.Connection.Open(uri);
        }
        catch (CertificateException ex)
        {
            return context.Fail(ExitCodes.Usage, ex.Message);
        }

        try
        {
            return await call(channel, DateTime.UtcNow + deadline);
        }
        catch (RpcException ex) when (CliConnection.IsTlsFailure(ex))
        {
            return context.Fail(ExitCodes.TlsFailed, context.Connection.TlsFailure(endpoint, ex));
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded)
        {
            var detail = ex.StatusCode == StatusCode.DeadlineExceeded ? $"no answer within {deadline.TotalSeconds:F0} s" : ex.Status.Detail;
            var secured = uri.Scheme == Uri.UriSchemeHttp ? " If the cluster is secured, use its https:// endpoint with --ca." : string.Empty;
            return context.Fail(ExitCodes.Unreachable, $"cannot reach a manager at {endpoint}{from} ({detail}). Is it running, and is --endpoint its gRPC address?{secured}");
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Unauthenticated)
        {
            return context.Fail(ExitCodes.Denied, $"the manager at {endpoint} does not know who you are: {ex.Status.Detail} (--cert and --key, or --token; or QUINTET_CERT, QUINTET_KEY, QUINTET_TOKEN; or a saved context with them)");
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.PermissionDenied)
        {
            return context.Fail(ExitCodes.Denied, $"the manager at {endpoint} refused: {ex.Status.Detail}");
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Cancelled)
        {
            return ExitCodes.Interrupted;
        }
        catch (RpcException ex)
        {
            return context.Fail(ExitCodes.Failed, $"the manager at {endpoint} refused the request: {ex.StatusCode}: {ex.Status.Detail}");
        }
        catch (OperationCanceledException)
        {
            return ExitCodes.Interrupted;
        }
        finally
        {
            channel.Dispose();
        }
    }
}
