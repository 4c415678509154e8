using System.CommandLine;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet roles ...</c>: who is in each role that a package declares (<c>[ComponentRoles]</c>). Changes are made on
/// every manager at once, in the managers' total order.
/// </summary>
internal static class RolesCommand
{
    private static readonly TimeSpan ListDeadline = TimeSpan.FromSeconds(10);

    // A change is audited before it runs, which may wait up to 15 s for the audit log's store.
    private static readonly TimeSpan ChangeDeadline = TimeSpan.FromSeconds(40);

        public static Command Create(CliContext context)
    {
        var listEndpoint = AdminCall.EndpointOption();
        var listOutput = OutputFormats.CreateOption();
        var listPackage = new Option<string?>("--package", "-p") { Description = "Only this package." };
        var list = new Command("list", "List the roles the deployed packages declare and their members.") { listPackage, listEndpoint, listOutput };
        list.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(listEndpoint), ListDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentRoles.ComponentRolesClient(channel).ListRoleAssignmentsAsync(
                new ListRoleAssignmentsRequest { Package = parse.GetValue(listPackage) ?? "" }, deadline: deadline, cancellationToken: token);
            if (parse.GetRequiredValue(listOutput) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var table = new Table().AddColumns("package", "role", "members");
            foreach (var package in response.Packages)
            {
                foreach (var role in package.Roles)
                {
                    var name = package.Package + (package.Deployed ? "" : " (not deployed)");
                    var members = role.Members.Count == 0 ? "[grey](none)[/]" : Markup.Escape(string.Join(", ", role.Members));
                    table.AddRow(Markup.Escape(name), Markup.Escape(role.Role + (role.Declared || !package.Deployed ? "" : " (no longer declared)")), members);
                }
            }

            context.Console.Write(table);
            context.Console.MarkupLine($"{response.Packages.Count} package(s) with roles.");
            return ExitCodes.Ok;
        }));

        return new Command("roles", "Assign members to the roles that packages declare: user:<name> (a caller's authenticated name) or role:<name> (a role of its certificate or token).")
        {
            list,
            Change(context, "add", "Add members to a role of a package, on every manager.", (client, request, deadline, token) => client.AddRoleMembersAsync(request, deadline: deadline, cancellationToken: token).ResponseAsync, membersRequired: true),
            Change(context, "remove", "Remove members from a role of a package, on every manager.", (client, request, deadline, token) => client.RemoveRoleMembersAsync(request, deadline: deadline, cancellationToken: token).ResponseAsync, membersRequired: true),
            Change(context, "set", "Replace the members of a role of a package, on every manager (none: empty it).", (client, request, deadline, token) => client.SetRoleMembersAsync(request, deadline: deadline, cancellationToken: token).ResponseAsync, membersRequired: false),
        };
    }

    private static Command Change(CliContext context, string name, string description, Func<ComponentRoles.ComponentRolesClient, RoleMembersRequest, DateTime, CancellationToken, Task<RoleMembersResponse>> call, bool membersRequired)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var package = new Argument<string>("package") { Description = "The package, as its manifest names it." };
        var role = new Argument<string>("role") { Description = "A role the package declares ('quintet roles list' shows them)." };
        var members = new Argument<string[]>("members")
        {
            Description = "user:<name> or role:<name>, for example user:alice role:tellers.",
            Arity = membersRequired ? ArgumentArity.OneOrMore : ArgumentArity.ZeroOrMore,
        };
        var command = new Command(name, description) { package, role, members, endpoint, output };
        command.SetAction((parse, token) =>
        {
            var given = parse.GetValue(members) ?? [];
            var wrong = given.FirstOrDefault(m => !m.StartsWith("user:", StringComparison.Ordinal) && !m.StartsWith("role:", StringComparison.Ordinal));
            if (wrong is not null)
            {
                return Task.FromResult(context.Fail(ExitCodes.Usage, $"'{wrong}' is not a member: write user:<name> (a caller's authenticated name) or role:<name> (a role of its certificate or token)."));
            }

            return AdminCall.RunAsync(context, parse.GetValue(endpoint), ChangeDeadline, async (channel, deadline) =>
            {
                var request = new RoleMembersRequest { Package = parse.GetRequiredValue(package), Role = parse.GetRequiredValue(role) };
                request.Members.AddRange(given);
                var response = await call(new ComponentRoles.ComponentRolesClient(channel), request, deadline, token);
                if (parse.GetRequiredValue(output) == OutputFormats.Json)
                {
                    OutputFormats.WriteJson(context, response);
                    return ExitCodes.Ok;
                }

                var now = response.Members.Count == 0 ? "no members" : string.Join(", ", response.Members);
                context.Console.MarkupLine($"Role [bold]{Markup.Escape(response.Role)}[/] of [bold]{Markup.Escape(response.Package)}[/] on every manager: {Markup.Escape(now)}.");
                return ExitCodes.Ok;
            });
        });
        return command;
    }
}
