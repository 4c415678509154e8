using System.CommandLine;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet cluster ...</c>: look at a running cluster.</summary>
internal static class ClusterCommand
{
    public const string DefaultEndpoint = AdminCall.DefaultEndpoint;
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();

        var show = new Command("show", "Print the cluster's managers as one manager sees them.") { endpoint, output };
        show.SetAction((parse, cancellationToken) =>
            ShowAsync(context, parse.GetValue(endpoint), parse.GetRequiredValue(output), cancellationToken));

        return new Command("cluster", "Look at a running cluster.")
        {
            show,
            ClusterViewsCommands.Tree(context),
            ClusterViewsCommands.Groups(context),
            ClusterViewsCommands.Log(context),
            ClusterTopCommand.Create(context),
            ClusterStoresCommand.Create(context),
            ClusterViewCommand.Create(context),
            DrainCommand.CreateDrain(context),
            DrainCommand.CreateStatus(context),
            RestartCommand.Create(context),
        };
    }

    private static Task<int> ShowAsync(CliContext context, string? endpoint, string output, CancellationToken cancellationToken) =>
        AdminCall.RunAsync(context, endpoint, CallDeadline, async (channel, deadline) =>
        {
            var view = await new ClusterAdmin.ClusterAdminClient(channel).ListManagersAsync(
                new ListManagersRequest { IncludeReports = true }, deadline: deadline, cancellationToken: cancellationToken);
            ClusterView.Write(context.Console, view, output);
            return ExitCodes.Ok;
        });
}
