using System.CommandLine;
using System.Globalization;
using System.Net.Sockets;
using Grpc.Core;
using Grpc.Net.Client;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Proxy;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet proxy ...</c>: look at the local proxy (quintet-proxy) of this machine.</summary>
internal static class ProxyCommand
{
    /// <summary>Where the proxy listens unless configured otherwise.</summary>
    public const string DefaultProxy = "http://127.0.0.1:7071";

    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    public static Command Create(CliContext context)
    {
        var proxy = new Option<string>("--proxy", "-p")
        {
            Description = $"The local proxy: its loopback address (http://127.0.0.1:7071) or its Unix socket (unix:/run/quintet-proxy/proxy.sock). Default: {DefaultProxy}.",
            DefaultValueFactory = _ => DefaultProxy,
        };
        var maxRoutes = new Option<int>("--max-routes")
        {
            Description = "At most this many learned routes in the answer (default 100).",
            DefaultValueFactory = _ => 100,
        };
        var output = OutputFormats.CreateOption();
        var status = new Command("status", "The local proxy's health, the managers it knows and their health, and the routes it has learned.") { proxy, maxRoutes, output };
        status.SetAction((parse, cancellationToken) =>
            StatusAsync(context, parse.GetRequiredValue(proxy), parse.GetValue(maxRoutes), parse.GetRequiredValue(output), cancellationToken));
        return new Command("proxy", "Look at the local proxy (quintet-proxy).") { status };
    }

    private static async Task<int> StatusAsync(CliContext context, string proxy, int maxRoutes, string output, CancellationToken cancellationToken)
    {
        if (maxRoutes < 0)
        {
            return context.Fail(ExitCodes.Usage, $"--max-routes is {maxRoutes}; give 0 or more.");
        }

        GrpcChannel channel;
        try
        {
            channel = Open(proxy);
        }
        catch (ArgumentException e)
        {
            return context.Fail(ExitCodes.Usage, e.Message);
        }

        using (channel)
        {
            ProxyStatusResponse status;
            try
            {
                status = await new ProxyStatus.ProxyStatusClient(channel).GetStatusAsync(
                    new GetProxyStatusRequest { MaxRoutes = maxRoutes }, deadline: DateTime.UtcNow + CallDeadline, cancellationToken: cancellationToken);
            }
            catch (RpcException e) when (e.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded or StatusCode.Unimplemented)
            {
                return context.Fail(ExitCodes.Unreachable, $"no quintet-proxy answered at {proxy} ({e.StatusCode}: {e.Status.Detail}). Is it running (systemctl status quintet-proxy), and is --proxy where it listens?");
            }
            catch (RpcException e) when (e.StatusCode is StatusCode.Cancelled)
            {
                return ExitCodes.Interrupted;
            }
            catch (OperationCanceledException)
            {
                return ExitCodes.Interrupted;
            }

            Write(context, status, output);
            return ExitCodes.Ok;
        }
    }

    /// <summary>A channel to the proxy: plain HTTP/2 over loopback TCP, or over its Unix socket.</summary>
    private static GrpcChannel Open(string proxy)
    {
        if (proxy.StartsWith("unix:", StringComparison.Ordinal))
        {
            var path = proxy["unix:".Length..];
            var handler = new SocketsHttpHandler
            {
                ConnectCallback = async (_, cancellationToken) =>
                {
                    var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                    try
                    {
                        await socket.ConnectAsync(new UnixDomainSocketEndPoint(path), cancellationToken);
                        return new NetworkStream(socket, ownsSocket: true);
                    }
                    catch
                    {
                        socket.Dispose();
                        throw;
                    }
                },
            };

            // The host name is not used to connect: the callback does.
            return GrpcChannel.ForAddress("http://localhost", new GrpcChannelOptions { HttpHandler = handler });
        }

        if (!Uri.TryCreate(proxy, UriKind.Absolute, out var uri) || uri.Scheme != Uri.UriSchemeHttp)
        {
            throw new ArgumentException($"--proxy '{proxy}' is neither an http:// loopback address (for example {DefaultProxy}) nor unix:<path of the socket>.");
        }

        return GrpcChannel.ForAddress(uri);
    }

    private static void Write(CliContext context, ProxyStatusResponse status, string output)
    {
        if (OutputFormats.IsJson(output))
        {
            OutputFormats.WriteJson(context, status);
            return;
        }

        var console = context.Console;
        var color = status.Health == "SERVING" ? "green" : "red";
        console.MarkupLine(string.Create(CultureInfo.InvariantCulture,
            $"quintet-proxy {Markup.Escape(status.Version)}: [{color}]{status.Health}[/], up {status.UptimeSeconds:F0} s, listening on {Markup.Escape(string.Join(", ", status.Listening))}"));
        console.MarkupLine(string.Create(CultureInfo.InvariantCulture,
            $"calls the managers as {Markup.Escape(status.PresentedIdentity)} (client id {Markup.Escape(status.ClientId)}), failover budget {status.FailoverBudgetSeconds:0.###} s; " +
            $"{status.Calls.Calls} calls, {status.Calls.DirectAttempts} sent straight to the owner, {status.Calls.ForwardedCalls} took a hop, {status.Calls.Retries} retries"));
        var managers = new Table().Title("managers").AddColumns("endpoint", "configured", "health", "checked", "routes", "problem");
        foreach (var m in status.Managers)
        {
            managers.AddRow(
                Markup.Escape(m.Endpoint),
                m.Configured ? "yes" : "named by a manager",
                m.Health == "SERVING" ? "[green]SERVING[/]" : $"[red]{Markup.Escape(m.Health)}[/]",
                m.Health == "UNKNOWN" ? "-" : string.Create(CultureInfo.InvariantCulture, $"{m.CheckedSecondsAgo:F0} s ago"),
                m.Routes.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(m.Problem));
        }

        console.Write(managers);
        var routes = new Table().Title(string.Create(CultureInfo.InvariantCulture, $"routes learned: {status.RouteCount}{(status.Routes.Count < status.RouteCount ? $" (the first {status.Routes.Count})" : "")}")).AddColumns("contract", "key", "owner");
        foreach (var r in status.Routes)
        {
            routes.AddRow(Markup.Escape(r.Contract), Markup.Escape(r.Key), Markup.Escape(r.Endpoint));
        }

        console.Write(routes);
    }
}
