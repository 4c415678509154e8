using System.CommandLine;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Security;

namespace Quintet.Cli.Commands;

/// <summary>The endpoint option and the error handling every command that calls a manager shares.</summary>
internal static class AdminCall
{
    public const string DefaultEndpoint = "http://127.0.0.1:5053";

    public static Option<string> EndpointOption() => new("--endpoint", "-e")
    {
        Description = "The gRPC endpoint of any manager of the cluster (https://... for a secured cluster, with --ca).",
        DefaultValueFactory = _ => DefaultEndpoint,
    };

    /// <summary>Runs <paramref name="call"/> against the manager at <paramref name="endpoint"/>, turning failures into exit codes and messages.</summary>
    public static async Task<int> RunAsync(CliContext context, string endpoint, TimeSpan deadline, Func<GrpcChannel, DateTime, Task<int>> call)
    {
        if (!Uri.TryCreate(endpoint, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
        {
            return context.Fail(ExitCodes.Usage, $"--endpoint '{endpoint}' is not an http:// or https:// address (for example {DefaultEndpoint}).");
        }

        if (context.Connection.Check(uri) is { } wrong)
        {
            return context.Fail(ExitCodes.Usage, wrong);
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
            return context.Fail(ExitCodes.Unreachable, $"cannot reach a manager at {endpoint} ({detail}). Is it running, and is --endpoint its gRPC address?{secured}");
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Unauthenticated)
        {
            return context.Fail(ExitCodes.Denied, $"the manager at {endpoint} does not know who you are: {ex.Status.Detail} (--cert and --key, or --token; or QUINTET_CERT, QUINTET_KEY, QUINTET_TOKEN)");
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.PermissionDenied)
        {
            return context.Fail(ExitCodes.Denied, $"the manager at {endpoint} refused: {ex.Status.Detail}");
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
