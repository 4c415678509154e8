using System.CommandLine;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet component instances</c> and <c>quintet component migrate</c>: look at keyed instances and move them.</summary>
internal static class InstanceCommand
{
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    // A move waits for the running call to finish and hands the instance's state over: give it longer than a query.
    private static readonly TimeSpan MigrateDeadline = TimeSpan.FromSeconds(60);

    public static Command CreateInstances(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Option<string?>("--class") { Description = "Only the instances of this component class." };
        var debug = new Option<bool>("--debug") { Description = "Also print each instance's recent invocations (recorded for classes whose QoS spec sets debug: true)." };
        var instances = new Command("instances", "List the instances every manager of the cluster hosts, with their statistics.") { className, debug, endpoint };
        instances.SetAction((parse, token) => ListAsync(
            context, parse.GetRequiredValue(endpoint), parse.GetValue(className) ?? string.Empty, parse.GetValue(debug), token));
        return instances;
    }

    public static Command CreateMigrate(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };
        var key = new Argument<string>("key") { Description = "The instance's key." };
        var to = new Option<string>("--to") { Description = "The node name of the manager to move the instance to ('quintet cluster show' lists them).", Required = true };
        var migrate = new Command("migrate", "Move a keyed instance to another manager (its state travels through IMigrateState or its checkpoints); any manager takes the request.") { className, key, to, endpoint };
        migrate.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetRequiredValue(endpoint), MigrateDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).MigrateInstanceAsync(
                new MigrateInstanceRequest { ClassName = parse.GetRequiredValue(className), Key = parse.GetRequiredValue(key), ToManager = parse.GetRequiredValue(to) },
                deadline: deadline,
                cancellationToken: token);
            context.Console.MarkupLine(Markup.Escape(
                $"moved {parse.GetRequiredValue(className)} '{parse.GetRequiredValue(key)}' from {response.FromManager} to {response.ToManager} in {response.ElapsedMs:F1} ms (epoch {response.Epoch})"));
            return ExitCodes.Ok;
        }));
        return migrate;
    }

    /// <summary>
    /// Asks the manager at <paramref name="endpoint"/> for the cluster's managers, then every one of them for the
    /// instances it hosts, all at once: each manager knows only its own.
    /// </summary>
    private static Task<int> ListAsync(CliContext context, string endpoint, string className, bool debug, CancellationToken token) =>
        AdminCall.RunAsync(context, endpoint, CallDeadline, async (channel, deadline) =>
        {
            var view = await new ClusterAdmin.ClusterAdminClient(channel).ListManagersAsync(
                new ListManagersRequest { IncludeReports = true }, deadline: deadline, cancellationToken: token);
            var request = new ListInstancesRequest { ClassName = className };
            var answers = await Task.WhenAll(view.Managers.Select(manager => AskAsync(context.Connection, manager, endpoint, request, token)));
            token.ThrowIfCancellationRequested();

            InstanceView.Write(context.Console, answers, debug);
            if (answers.All(a => a.Response is null))
            {
                var allUnreachable = answers.All(a => a.Unreachable);
                return context.Fail(
                    allUnreachable ? ExitCodes.Unreachable : ExitCodes.Failed,
                    $"none of the {answers.Length} manager(s) that {endpoint} knows listed its instances.");
            }

            return ExitCodes.Ok;
        });

    private static async Task<ManagerInstances> AskAsync(CliConnection connection, ManagerInfo manager, string askedEndpoint, ListInstancesRequest request, CancellationToken token)
    {
        var name = string.IsNullOrEmpty(manager.Report?.NodeName) ? manager.Address : manager.Report.NodeName;

        // The manager asked is reachable at the address the user gave, which its own report may not be (a host name
        // it advertises that does not resolve here, say).
        var endpoint = manager.IsSelf ? askedEndpoint : manager.Report?.GrpcEndpoint;
        if (string.IsNullOrEmpty(endpoint))
        {
            return new ManagerInstances(name, null, $"sent no report to the manager asked ({ClusterView.StateName(manager.State)}, {(manager.Reachable ? "reachable" : "unreachable")}), so its gRPC endpoint is unknown", Unreachable: true);
        }

        if (!Uri.TryCreate(endpoint, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
        {
            return new ManagerInstances(name, null, $"reports the gRPC endpoint '{endpoint}', which is not an http:// or https:// address", Unreachable: true);
        }

        try
        {
            using var channel = connection.Open(uri);
            var response = await new ComponentAdmin.ComponentAdminClient(channel).ListInstancesAsync(
                request, deadline: DateTime.UtcNow + CallDeadline, cancellationToken: token);
            return new ManagerInstances(string.IsNullOrEmpty(response.Manager) ? name : response.Manager, response, null, Unreachable: false);
        }
        catch (RpcException ex) when (ex.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded)
        {
            var detail = ex.StatusCode == StatusCode.DeadlineExceeded ? $"no answer within {CallDeadline.TotalSeconds:F0} s" : ex.Status.Detail;
            return new ManagerInstances(name, null, $"cannot be reached at {endpoint} ({detail})", Unreachable: true);
        }
        catch (RpcException ex)
        {
            return new ManagerInstances(name, null, $"refused at {endpoint}: {ex.StatusCode}: {ex.Status.Detail}", Unreachable: false);
        }
    }
}

/// <summary>What one manager answered: its instances, or why there are none to show.</summary>
internal sealed record ManagerInstances(string Manager, ListInstancesResponse? Response, string? Problem, bool Unreachable);
