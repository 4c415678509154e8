using System.CommandLine;
using System.Text.Json.Nodes;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet component manage</c>: a class's management module ([ManagementContract]) on one instance: without an
/// operation, what the module offers; with a view, its answer; with an action, the action run (and audited). Like
/// every command, it asks nothing: the console asks the confirmation a package gives an action.
/// </summary>
internal static class ManageCommand
{
    // A management operation runs in the instance like a call, after the one running: as long as a migration may take.
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(60);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var className = new Argument<string>("class") { Description = "The component class, for example Samples.BankAccount.AccountComponent." };
        var key = new Argument<string>("key") { Description = "The instance's key." };
        var operation = new Argument<string?>("operation") { Description = "The view or action to run; omitted: list what the module offers.", Arity = ArgumentArity.ZeroOrOne };
        var set = new Option<string[]>("--set", "-s") { Description = "A field of the request, name=value (the names and kinds the listing shows); repeat for each.", AllowMultipleArgumentsPerToken = false };
        var contract = new Option<string?>("--contract") { Description = "The management contract, when the class has more than one." };
        var manage = new Command("manage", "Run a view or an action of a class's management module on one instance (views need reader; actions operator or admin, as the package says, and are audited).")
        {
            className, key, operation, set, contract, endpoint, output,
        };
        manage.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var admin = new ComponentAdmin.ComponentAdminClient(channel);
            var (name, instanceKey, json) = (parse.GetRequiredValue(className), parse.GetRequiredValue(key), OutputFormats.IsJson(parse.GetValue(output)));
            var packages = await admin.ListPackagesAsync(new ListPackagesRequest(), deadline: deadline, cancellationToken: token);
            var described = packages.Packages.SelectMany(p => p.Classes).FirstOrDefault(c => c.ClassName == name);
            if (described is null)
            {
                return context.Fail(ExitCodes.Failed, $"No deployed class is named '{name}'; 'quintet component list' shows the deployed ones.");
            }

            var wanted = parse.GetValue(contract);
            var modules = described.Management.Where(m => string.IsNullOrEmpty(wanted) || m.Contract == wanted).ToList();
            if (modules.Count == 0)
            {
                return context.Fail(ExitCodes.Failed, described.Management.Count == 0
                    ? $"{name} has no management module: its package marks no contract of it [ManagementContract]."
                    : $"{name} has no management module '{wanted}'; it has {string.Join(", ", described.Management.Select(m => m.Contract))}.");
            }

            if (parse.GetValue(operation) is not { Length: > 0 } operationName)
            {
                return List(context, name, modules, json);
            }

            if (modules.Count > 1)
            {
                return context.Fail(ExitCodes.Usage, $"{name} has {modules.Count} management modules; name one with --contract: {string.Join(", ", modules.Select(m => m.Contract))}.");
            }

            var module = modules[0];
            var chosen = module.Operations.FirstOrDefault(o => o.Operation == operationName);
            if (chosen is null)
            {
                return context.Fail(ExitCodes.Failed, $"Management module {module.Contract} has no operation '{operationName}'; it has {string.Join(", ", module.Operations.Select(o => o.Operation))}.");
            }

            var settings = new List<KeyValuePair<string, string>>();
            foreach (var setting in parse.GetValue(set) ?? [])
            {
                var equals = setting.IndexOf('=', StringComparison.Ordinal);
                if (equals <= 0)
                {
                    return context.Fail(ExitCodes.Usage, $"--set '{setting}' is not name=value.");
                }

                settings.Add(new(setting[..equals], setting[(equals + 1)..]));
            }

            var (arguments, problem) = Quintet.AdminClient.ManagementArguments.Read(chosen, settings);
            if (arguments is null)
            {
                return context.Fail(ExitCodes.Usage, $"--set: {problem}");
            }

            var request = new ManagementRequest { ClassName = name, Key = instanceKey, Contract = module.Contract, Operation = operationName, ArgumentsJson = arguments.ToJsonString() };
            var response = chosen.IsView
                ? await admin.GetManagementViewAsync(request, deadline: deadline, cancellationToken: token)
                : await admin.RunManagementActionAsync(request, deadline: deadline, cancellationToken: token);
            if (json)
            {
                OutputFormats.WriteJson(context, new { className = name, key = instanceKey, contract = module.Contract, operation = operationName, manager = response.Manager, result = JsonNode.Parse(response.ResultJson) });
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine(Markup.Escape($"{chosen.Label} of {name} '{instanceKey}', run on {response.Manager}:"));
            var table = new Table().AddColumns("field", "value");
            foreach (var (field, value) in Quintet.AdminClient.ManagementArguments.Fields(response.ResultJson))
            {
                table.AddRow(Markup.Escape(field), Markup.Escape(value));
            }

            context.Console.Write(table);
            return ExitCodes.Ok;
        }));
        return manage;
    }

    private static int List(CliContext context, string className, IReadOnlyList<ManagementModuleInfo> modules, bool json)
    {
        if (json)
        {
            OutputFormats.WriteJson(context, new { className, management = modules.Select(OutputFormats.ToNode).ToList() });
            return ExitCodes.Ok;
        }

        foreach (var module in modules)
        {
            context.Console.MarkupLine(Markup.Escape($"{module.Title} ({module.Contract}) of {className}:"));
            var table = new Table().AddColumns("operation", "kind", "role", "fields", "what it does");
            foreach (var op in module.Operations)
            {
                table.AddRow(
                    Markup.Escape(op.Operation),
                    op.IsView ? "view" : "action",
                    Markup.Escape(op.Role),
                    Markup.Escape(op.Fields.Count == 0 ? "-" : string.Join(", ", op.Fields.Select(f => f.Values.Count > 0 ? $"{f.Name} ({string.Join("|", f.Values)})" : $"{f.Name} ({f.Kind})"))),
                    Markup.Escape(op.Description.Length > 0 ? op.Description : op.Label));
            }

            context.Console.Write(table);
        }

        return ExitCodes.Ok;
    }
}
