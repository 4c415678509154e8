using System.CommandLine;
using System.IO.Compression;
using Google.Protobuf;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet component ...</c> and <c>quintet proto export</c>: deploy packages and describe contracts.</summary>
internal static class ComponentCommand
{
    private static readonly TimeSpan DeployDeadline = TimeSpan.FromSeconds(120);
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    public static Command Create(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var path = new Argument<string>("package") { Description = "The package: a folder with quintet-package.json at its root, or a zip of one." };
        var deploy = new Command("deploy", "Deploy a component package to the manager.") { path, endpoint };
        deploy.SetAction((parse, token) => DeployAsync(context, parse.GetRequiredValue(path), parse.GetRequiredValue(endpoint), token));

        var name = new Argument<string>("name") { Description = "The package's name, as its manifest gives it." };
        var undeployEndpoint = AdminCall.EndpointOption();
        var undeploy = new Command("undeploy", "Deactivate a package's instances and unload it.") { name, undeployEndpoint };
        undeploy.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetRequiredValue(undeployEndpoint), CallDeadline, async (channel, deadline) =>
        {
            await new ComponentAdmin.ComponentAdminClient(channel).UndeployPackageAsync(new UndeployPackageRequest { Name = parse.GetRequiredValue(name) }, deadline: deadline, cancellationToken: token);
            context.Console.MarkupLine($"Undeployed [bold]{Markup.Escape(parse.GetRequiredValue(name))}[/].");
            return ExitCodes.Ok;
        }));

        var listEndpoint = AdminCall.EndpointOption();
        var list = new Command("list", "List the deployed packages, their classes and contracts.") { listEndpoint };
        list.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetRequiredValue(listEndpoint), CallDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).ListPackagesAsync(new ListPackagesRequest(), deadline: deadline, cancellationToken: token);
            var table = new Table().AddColumns("package", "version", "class", "contracts", "roles");
            foreach (var package in response.Packages)
            {
                foreach (var componentClass in package.Classes)
                {
                    table.AddRow(Markup.Escape(package.Name), Markup.Escape(package.Version), Markup.Escape(componentClass.ClassName), Markup.Escape(string.Join(", ", componentClass.Contracts)), Markup.Escape(DescribeRoles(package, componentClass)));
                }
            }

            context.Console.Write(table);
            context.Console.MarkupLine($"{response.Packages.Count} package(s), {response.Instances} live instance(s).");
            return ExitCodes.Ok;
        }));

        return new Command("component", "Deploy, undeploy and list component packages; list and move their instances.")
        {
            deploy, undeploy, list, InstanceCommand.CreateInstances(context), InstanceCommand.CreateMigrate(context),
        };
    }

    /// <summary>Each operation with the roles that open it; "any caller" for a package that declares none.</summary>
    private static string DescribeRoles(PackageInfo package, ComponentClassInfo componentClass) =>
        package.Roles.Count == 0
            ? "any caller"
            : string.Join("; ", componentClass.Operations.Select(o => $"{o.Operation}: {(o.Roles.Count == 0 ? "nobody" : string.Join(", ", o.Roles))}"));

    public static Command CreateProto(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var contract = new Option<string>("--contract", "-c") { Description = "The contract's service name, for example samples.counter.Counter.", Required = true };
        var output = new Option<string?>("--output", "-o") { Description = "The file to write; standard output when left out." };
        var export = new Command("export", "Write the .proto of a deployed contract, for any gRPC client.") { contract, output, endpoint };
        export.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetRequiredValue(endpoint), CallDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).ExportProtoAsync(
                new ExportProtoRequest { Contract = parse.GetRequiredValue(contract) }, deadline: deadline, cancellationToken: token);
            if (parse.GetValue(output) is { } file)
            {
                await File.WriteAllTextAsync(file, response.Content, token);
                context.Console.MarkupLine($"Wrote {Markup.Escape(file)}.");
            }
            else
            {
                context.Console.Profile.Out.Writer.Write(response.Content);
            }

            return ExitCodes.Ok;
        }));
        return new Command("proto", "Describe contracts as .proto files.") { export };
    }

    private static async Task<int> DeployAsync(CliContext context, string path, string endpoint, CancellationToken token)
    {
        byte[] zip;
        if (Directory.Exists(path))
        {
            using var buffer = new MemoryStream();
            ZipFile.CreateFromDirectory(path, buffer, CompressionLevel.Fastest, includeBaseDirectory: false);
            zip = buffer.ToArray();
        }
        else if (File.Exists(path))
        {
            zip = await File.ReadAllBytesAsync(path, token);
        }
        else
        {
            return context.Fail(ExitCodes.Usage, $"'{path}' is neither a package folder nor a zip file.");
        }

        return await AdminCall.RunAsync(context, endpoint, DeployDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).DeployPackageAsync(
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(zip) }, deadline: deadline, cancellationToken: token);
            var package = response.Package;
            context.Console.MarkupLine($"Deployed [bold]{Markup.Escape(package.Name)}[/] {Markup.Escape(package.Version)}: " +
                Markup.Escape(string.Join("; ", package.Classes.Select(c => $"{c.ClassName} ({string.Join(", ", c.Contracts)})"))));
            return ExitCodes.Ok;
        });
    }
}
