using System.CommandLine;
using System.Globalization;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster tree|groups|log</c>: the cluster as a tree, the groups and their views, a manager's recent problems.</summary>
internal static class ClusterViewsCommands
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    public static Command Tree(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var className = new Option<string?>("--class") { Description = "Only instances of this class." };
        var manager = new Option<string?>("--manager", "-m") { Description = "Only instances owned by this manager (its node name)." };
        var keyPrefix = new Option<string?>("--key-prefix") { Description = "Only instances whose key starts with this." };
        var offset = new Option<int>("--offset") { Description = "Start this many matching instances in (0 to 200000): a page far down the listing without the pages before it." };
        var paging = PageOptions.Create("Instances");
        var command = new Command("tree", "Print the cluster as a tree: managers, packages and classes, and a page of the instances with the managers that hold them.")
        {
            className, manager, keyPrefix, offset, endpoint, output,
        };
        paging.AddTo(command);
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var client = new ClusterAdmin.ClusterAdminClient(channel);

            // The offset places the first page; the pages after it follow its token.
            var skip = parse.GetValue(offset);
            var (tree, next) = await paging.ReadAsync(
                parse,
                (size, pageToken) => client.GetClusterTreeAsync(
                    new GetClusterTreeRequest { PageSize = size, PageToken = pageToken, Offset = Interlocked.Exchange(ref skip, 0), ClassName = parse.GetValue(className) ?? "", Manager = parse.GetValue(manager) ?? "", KeyPrefix = parse.GetValue(keyPrefix) ?? "" },
                    deadline: deadline,
                    cancellationToken: token).ResponseAsync,
                t => t.NextPageToken,
                (first, page) => first.Instances.AddRange(page.Instances));
            tree.NextPageToken = next;
            if (parse.GetRequiredValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, tree);
                return ExitCodes.Ok;
            }

            WriteTree(context, tree);
            return ExitCodes.Ok;
        }));
        return command;
    }

    public static Command Groups(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var manager = new Option<string?>("--manager", "-m") { Description = "The manager to ask (its node name); default: the one at the endpoint." };
        var prefix = new Option<string?>("--prefix") { Description = "Only groups whose name starts with this." };
        var members = new Option<int>("--members") { Description = "Members shown per group, 1 to 1000 (default 20).", DefaultValueFactory = _ => 0 };
        var paging = PageOptions.Create("Groups");
        var command = new Command("groups", "Print the groups a manager knows (the managers group, class groups, replicated state machines, application groups) and their current views.")
        {
            manager, prefix, members, endpoint, output,
        };
        paging.AddTo(command);
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var client = new ClusterAdmin.ClusterAdminClient(channel);
            var (groups, next) = await paging.ReadAsync(
                parse,
                (size, pageToken) => client.ListGroupsAsync(
                    new ListGroupsRequest { Manager = parse.GetValue(manager) ?? "", NamePrefix = parse.GetValue(prefix) ?? "", PageSize = size, PageToken = pageToken, MembersPerGroup = parse.GetValue(members) },
                    deadline: deadline,
                    cancellationToken: token).ResponseAsync,
                g => g.NextPageToken,
                (first, page) => first.Groups.AddRange(page.Groups));
            groups.NextPageToken = next;
            if (parse.GetRequiredValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, groups);
                return ExitCodes.Ok;
            }

            var table = new Table().Title($"groups as {Markup.Escape(groups.Manager)} knows them").AddColumns("group", "kind", "view", "members", "coordinator", "here", "first members");
            foreach (var group in groups.Groups)
            {
                var shown = string.Join(", ", group.Members.Select(m => m.Tag.Length > 0 ? $"{m.Id} ({m.Tag})" : m.Id));
                table.AddRow(
                    Markup.Escape(group.Name),
                    Markup.Escape(group.Kind + (group.Kind == "managers" && !group.InPrimary ? " (not primary)" : "")),
                    group.ViewId.ToString(CultureInfo.InvariantCulture),
                    group.MemberCount.ToString(CultureInfo.InvariantCulture),
                    Markup.Escape(group.Coordinator),
                    group.HostedHere.ToString(CultureInfo.InvariantCulture),
                    Markup.Escape(shown + (group.MemberCount > group.Members.Count ? ", ..." : "")));
            }

            context.Console.Write(table);
            NextPage(context, groups.NextPageToken);
            return ExitCodes.Ok;
        }));
        return command;
    }

    public static Command Log(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var manager = new Option<string?>("--manager", "-m") { Description = "The manager to ask (its node name); default: the one at the endpoint." };
        var level = new Option<string>("--level") { Description = "Only entries at this level or above: warning or error.", DefaultValueFactory = _ => "warning" };
        level.AcceptOnlyFromAmong("warning", "error", "critical");
        var limit = new Option<int>("--limit", "-n") { Description = "At most this many entries, newest first (1 to 1000).", DefaultValueFactory = _ => 100 };
        var command = new Command("log", "Print a manager's recent warnings and errors, newest first, from the ring it keeps in memory.")
        {
            manager, level, limit, endpoint, output,
        };
        command.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), Deadline, async (channel, deadline) =>
        {
            var response = await new ClusterAdmin.ClusterAdminClient(channel).ListManagerLogAsync(
                new ListManagerLogRequest { Manager = parse.GetValue(manager) ?? "", MinLevel = parse.GetRequiredValue(level), Limit = parse.GetValue(limit) },
                deadline: deadline,
                cancellationToken: token);
            if (parse.GetRequiredValue(output) == OutputFormats.Json)
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var table = new Table().Title($"recent problems of {Markup.Escape(response.Manager)}").AddColumns("time (UTC)", "level", "category", "message");
            foreach (var entry in response.Entries)
            {
                var message = entry.ExceptionType.Length > 0 ? $"{entry.Message} ({entry.ExceptionType}: {entry.ExceptionMessage})" : entry.Message;
                table.AddRow(
                    entry.Time.ToDateTime().ToString("yyyy-MM-dd HH:mm:ss.fff", CultureInfo.InvariantCulture),
                    entry.Level == "warning" ? "[yellow]warning[/]" : $"[red]{Markup.Escape(entry.Level)}[/]",
                    Markup.Escape(entry.Category),
                    Markup.Escape(message));
            }

            context.Console.Write(table);
            context.Console.MarkupLine($"{response.Entries.Count} entr{(response.Entries.Count == 1 ? "y" : "ies")}; the manager keeps the last {response.Capacity} and let {response.Dropped} older ones go.");
            return ExitCodes.Ok;
        }));
        return command;
    }

    /// <summary>Tells how to ask for the next page, if there is one.</summary>
    public static void NextPage(CliContext context, string token)
    {
        if (token.Length > 0)
        {
            context.Console.MarkupLine($"More follow: --page-token {Markup.Escape(token)} (or --all).");
        }
    }

    private static void WriteTree(CliContext context, GetClusterTreeResponse tree)
    {
        var managers = new Table().Title($"cluster [bold]{Markup.Escape(tree.ClusterName)}[/], as seen by {Markup.Escape(tree.AnsweredBy)}")
            .AddColumns("manager", "state", "ready", "managers group", "instances", "packages", "gRPC endpoint");
        foreach (var entry in tree.Managers.OrderBy(m => m.Manager.NodeName, StringComparer.Ordinal))
        {
            var m = entry.Manager;
            var name = (m.NodeName.Length > 0 ? m.NodeName : m.Address) + (m.IsLeader ? " (leader)" : "") + (m.IsSelf ? " *" : "");
            var ready = m.Report is null ? "[grey]no report[/]" : m.Report.Ready ? "yes" : $"[red]no[/]: {Markup.Escape(m.Report.Readiness)}";
            var group = m.InManagersGroup ? (m.IsGroupCoordinator ? "member (coordinator)" : "member") : "[red]not a member[/]";
            managers.AddRow(
                Markup.Escape(name),
                Markup.Escape(m.State.ToString()) + (m.Reachable ? "" : " [red](unreachable)[/]"),
                ready,
                group,
                entry.OwnedInstances.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(m.Report is null ? "-" : string.Join(", ", m.Report.Packages)),
                Markup.Escape(m.Report?.GrpcEndpoint ?? "-"));
        }

        context.Console.Write(managers);

        var classes = new Table().AddColumns("package", "class", "contracts", "QoS", "instances");
        foreach (var package in tree.Packages)
        {
            foreach (var componentClass in package.Classes)
            {
                classes.AddRow(
                    Markup.Escape($"{package.Name} {package.Version}"),
                    Markup.Escape(componentClass.ClassName),
                    Markup.Escape(string.Join(", ", componentClass.Contracts)),
                    Markup.Escape(componentClass.QosSummary),
                    componentClass.Instances.ToString(CultureInfo.InvariantCulture));
            }
        }

        context.Console.Write(classes);

        var instances = new Table().AddColumns("class", "key", "state", "owner", "epoch", "holders");
        foreach (var instance in tree.Instances)
        {
            instances.AddRow(
                Markup.Escape(instance.ClassName),
                Markup.Escape(instance.Key),
                Markup.Escape(instance.State),
                Markup.Escape(instance.Owner + (instance.OwnerInView ? "" : " (gone)")),
                instance.Epoch.ToString(CultureInfo.InvariantCulture),
                Markup.Escape(string.Join(", ", instance.Holders.Select(h => $"{h.Manager} {h.Role} ({h.State})"))));
        }

        context.Console.Write(instances);
        context.Console.MarkupLine($"{tree.Instances.Count} of {tree.MatchingInstances} matching instance(s).");
        foreach (var unanswered in tree.Unanswered)
        {
            context.Console.MarkupLine($"[yellow]No answer from[/] {Markup.Escape(unanswered)}: its holders show state unknown.");
        }

        NextPage(context, tree.NextPageToken);
    }
}
