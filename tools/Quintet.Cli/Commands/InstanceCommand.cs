using System.CommandLine;
using System.Globalization;
using Grpc.Core;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet component instances</c>, <c>owner</c>, <c>migrate</c>, <c>retire</c> and <c>reactivate</c>: look at keyed instances and move them.</summary>
internal static class InstanceCommand
{
    internal static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    // A move waits for the running call to finish and hands the instance's state over: give it longer than a query.
    private static readonly TimeSpan MigrateDeadline = TimeSpan.FromSeconds(60);

    public static Command CreateInstances(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Option<string?>("--class") { Description = "Only the instances of this component class." };
        var debug = new Option<bool>("--debug") { Description = "Also print each instance's recent invocations (recorded for classes whose QoS spec sets debug: true); JSON always carries them." };
        var output = OutputFormats.CreateOption();
        var instances = new Command("instances", "List the instances every manager of the cluster hosts, with their statistics.") { className, debug, endpoint, output };
        instances.SetAction((parse, token) => ListAsync(
            context, parse.GetValue(endpoint), parse.GetValue(className) ?? string.Empty, parse.GetValue(debug), OutputFormats.IsJson(parse.GetValue(output)), token));
        return instances;
    }

    public static Command CreateMigrate(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };
        var key = new Argument<string>("key") { Description = "The instance's key." };
        var to = new Option<string>("--to") { Description = "The node name of the manager to move the instance to ('quintet cluster show' lists them).", Required = true };
        var output = OutputFormats.CreateOption();
        var migrate = new Command("migrate", "Move a keyed instance to another manager (its state travels through IMigrateState or its checkpoints); any manager takes the request.") { className, key, to, endpoint, output };
        migrate.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), MigrateDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).MigrateInstanceAsync(
                new MigrateInstanceRequest { ClassName = parse.GetRequiredValue(className), Key = parse.GetRequiredValue(key), ToManager = parse.GetRequiredValue(to) },
                deadline: deadline,
                cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                var json = OutputFormats.ToNode(response);
                json["className"] = parse.GetRequiredValue(className);
                json["key"] = parse.GetRequiredValue(key);
                OutputFormats.WriteJson(context, json);
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape(
                $"moved {parse.GetRequiredValue(className)} '{parse.GetRequiredValue(key)}' from {response.FromManager} to {response.ToManager} in {response.ElapsedMs:F1} ms (epoch {response.Epoch})"));
            return ExitCodes.Ok;
        }));
        return migrate;
    }

    public static Command CreateRetire(CliContext context) => KeyedAction(
        context,
        "retire",
        "Retire a keyed instance now, as retire-after-idle does: it checkpoints and is deactivated; its next call reactivates it.",
        (admin, className, key, deadline, token) => admin.RetireInstanceAsync(new RetireInstanceRequest { ClassName = className, Key = key }, deadline: deadline, cancellationToken: token).ResponseAsync,
        (response, instance) => response.WasActive
            ? $"retired {instance} on {response.Manager}; its next call reactivates it"
            : $"{instance} was not live on {response.Manager} (already retired, or not called since it was placed)");

    public static Command CreateReactivate(CliContext context) => KeyedAction(
        context,
        "reactivate",
        "Activate a retired keyed instance now, as its next call would, so that its callers do not wait for it.",
        (admin, className, key, deadline, token) => admin.ReactivateInstanceAsync(new ReactivateInstanceRequest { ClassName = className, Key = key }, deadline: deadline, cancellationToken: token).ResponseAsync,
        (response, instance) => response.Activated
            ? $"activated {instance} on {response.Manager} in {response.ElapsedMs:F1} ms"
            : $"{instance} was live already on {response.Manager}");

    /// <summary>
    /// A command that does one thing to one keyed instance on its owner (any manager passes it on): its response as
    /// JSON with the class and key, or the sentence <paramref name="describe"/> makes of it.
    /// </summary>
    private static Command KeyedAction<TResponse>(
        CliContext context,
        string name,
        string description,
        Func<ComponentAdmin.ComponentAdminClient, string, string, DateTime, CancellationToken, Task<TResponse>> call,
        Func<TResponse, string, string> describe)
        where TResponse : Google.Protobuf.IMessage
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };
        var key = new Argument<string>("key") { Description = "The instance's key." };
        var output = OutputFormats.CreateOption();
        var command = new Command(name, description) { className, key, endpoint, output };
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), MigrateDeadline, async (channel, deadline) =>
        {
            var (classValue, keyValue) = (parse.GetRequiredValue(className), parse.GetRequiredValue(key));
            var response = await call(new ComponentAdmin.ComponentAdminClient(channel), classValue, keyValue, deadline, token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                var json = OutputFormats.ToNode(response);
                json["className"] = classValue;
                json["key"] = keyValue;
                OutputFormats.WriteJson(context, json);
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape(describe(response, $"{classValue} '{keyValue}'")));
            return ExitCodes.Ok;
        }));
        return command;
    }

    public static Command CreateOwner(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };
        var key = new Argument<string>("key") { Description = "The instance's key." };
        var pid = new Option<bool>("--pid") { Description = "Print only the owner's process id (for kill), nothing else." };
        var output = OutputFormats.CreateOption();
        var owner = new Command("owner", "Show which manager owns a keyed instance, with its process id and endpoint, and which managers hold its backups or replicas.") { className, key, pid, endpoint, output };
        owner.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), CallDeadline, async (channel, deadline) =>
        {
            var (name, instanceKey) = (parse.GetRequiredValue(className), parse.GetRequiredValue(key));

            // Keys are listed in ordinal order, so the key itself comes first among those it is a prefix of.
            var tree = await new ClusterAdmin.ClusterAdminClient(channel).GetClusterTreeAsync(
                new GetClusterTreeRequest { ClassName = name, KeyPrefix = instanceKey, PageSize = 1 }, deadline: deadline, cancellationToken: token);
            var instance = tree.Instances.FirstOrDefault(i => i.ClassName == name && i.Key == instanceKey);
            if (instance is null || string.IsNullOrEmpty(instance.Owner))
            {
                return context.Fail(ExitCodes.Failed, $"{name} '{instanceKey}' has no owner in the cluster that {tree.AnsweredBy} sees: an instance is placed on its first call ('quintet cluster tree --class {name}' lists the instances there are).");
            }

            var report = tree.Managers.Select(m => m.Manager.Report).FirstOrDefault(r => r is not null && r.NodeName == instance.Owner);
            if (parse.GetValue(pid))
            {
                if (!instance.OwnerInView || report is null || report.ProcessId == 0)
                {
                    return context.Fail(ExitCodes.Failed, $"{name} '{instanceKey}' is owned by {instance.Owner}, whose process id is unknown: {(instance.OwnerInView ? "it sent no report" : "it has left the cluster, and the next call places the instance again")}.");
                }

                context.Out.WriteLine(report.ProcessId.ToString(CultureInfo.InvariantCulture));
                return ExitCodes.Ok;
            }

            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                var json = OutputFormats.ToNode(instance);
                json["processId"] = report?.ProcessId;
                json["grpcEndpoint"] = report?.GrpcEndpoint;
                OutputFormats.WriteJson(context, json);
                return ExitCodes.Ok;
            }

            var table = new Table().AddColumns("class", "key", "owner", "PID", "gRPC endpoint", "state", "epoch", "held by");
            table.AddRow(
                Markup.Escape(instance.ClassName),
                Markup.Escape(instance.Key),
                instance.OwnerInView ? Markup.Escape(instance.Owner) : $"[red]{Markup.Escape(instance.Owner)} (left)[/]",
                report is null ? "-" : report.ProcessId.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(report?.GrpcEndpoint ?? "-"),
                Markup.Escape(instance.State),
                instance.Epoch.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(string.Join(", ", instance.Holders.Select(h => $"{h.Manager} {h.Role}"))));
            context.Console.Write(table);
            return ExitCodes.Ok;
        }));
        return owner;
    }

    /// <summary><c>quintet instance create</c> and <c>destroy</c>: instances of classes whose QoS says <c>instancing: fresh</c>.</summary>
    public static Command CreateInstance(CliContext context)
    {
        var createEndpoint = AdminCall.EndpointOption();
        var createOutput = OutputFormats.CreateOption();
        var createContract = ContractArgument();
        var create = new Command("create", "Create an instance of a class whose QoS spec says instancing: fresh; its class factory picks the key and the manager.") { createContract, createEndpoint, createOutput };
        create.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(createEndpoint), CallDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentInstances.ComponentInstancesClient(channel).CreateInstanceAsync(
                new CreateInstanceRequest { Contract = parse.GetRequiredValue(createContract) }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(createOutput)))
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape($"created {response.ClassName} '{response.Key}' on {response.Manager} ({response.Endpoint})"));
            return ExitCodes.Ok;
        }));

        var destroyEndpoint = AdminCall.EndpointOption();
        var destroyOutput = OutputFormats.CreateOption();
        var destroyContract = ContractArgument();
        var key = new Argument<string>("key") { Description = "The instance's key, as 'quintet instance create' printed it." };
        var destroy = new Command("destroy", "Destroy a fresh instance: deactivate it, delete its checkpoints and forget it.") { destroyContract, key, destroyEndpoint, destroyOutput };
        destroy.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(destroyEndpoint), CallDeadline, async (channel, deadline) =>
        {
            var (contract, instance) = (parse.GetRequiredValue(destroyContract), parse.GetRequiredValue(key));
            await new ComponentInstances.ComponentInstancesClient(channel).DestroyInstanceAsync(
                new DestroyInstanceRequest { Contract = contract, Key = instance }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(destroyOutput)))
            {
                OutputFormats.WriteJson(context, new { contract, key = instance, destroyed = true });
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape($"destroyed {contract} '{instance}'"));
            return ExitCodes.Ok;
        }));

        return new Command("instance", "Create and destroy instances of classes whose QoS spec says instancing: fresh.") { create, destroy };
    }

    private static Argument<string> ContractArgument() =>
        new("contract") { Description = "The contract's service name, for example samples.counter.Counter." };

    /// <summary>
    /// Asks the manager the command targets for the cluster's managers, then every one of them for the
    /// instances it hosts, all at once: each manager knows only its own.
    /// </summary>
    private static Task<int> ListAsync(CliContext context, string? endpointFlag, string className, bool debug, bool json, CancellationToken token) =>
        AdminCall.RunAsync(context, endpointFlag, CallDeadline, async (channel, deadline) =>
        {
            var endpoint = context.Target!.Endpoint;
            var view = await new ClusterAdmin.ClusterAdminClient(channel).ListManagersAsync(
                new ListManagersRequest { IncludeReports = true }, deadline: deadline, cancellationToken: token);
            var request = new ListInstancesRequest { ClassName = className };
            var answers = await Task.WhenAll(view.Managers.Select(manager => AskAsync(context.Connection, manager, endpoint, request, token)));
            token.ThrowIfCancellationRequested();

            if (json)
            {
                OutputFormats.WriteJson(context, InstanceView.ToJson(answers));
            }
            else
            {
                InstanceView.Write(context.Console, answers, debug);
            }

            if (answers.All(a => a.Response is null))
            {
                var allUnreachable = answers.All(a => a.Unreachable);
                return context.Fail(
                    allUnreachable ? ExitCodes.Unreachable : ExitCodes.Failed,
                    $"none of the {answers.Length} manager(s) that {endpoint} knows listed its instances.");
            }

            return ExitCodes.Ok;
        });

    internal static async Task<ManagerInstances> AskAsync(CliConnection connection, ManagerInfo manager, string askedEndpoint, ListInstancesRequest request, CancellationToken token)
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
