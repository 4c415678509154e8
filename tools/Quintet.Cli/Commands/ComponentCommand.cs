using System.CommandLine;
using System.IO.Compression;
using Google.Protobuf;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet component ...</c> and <c>quintet proto export</c>: deploy packages and describe contracts.</summary>
internal static class ComponentCommand
{
    private static readonly TimeSpan DeployDeadline = TimeSpan.FromSeconds(120);
    private static readonly TimeSpan CallDeadline = TimeSpan.FromSeconds(10);

    public static Command Create(CliContext context) =>
        new("component", "Deploy, undeploy and list component packages; list and move their instances.")
        {
            CreateDeploy(context), CreateUndeploy(context), CreateList(context), InstanceCommand.CreateInstances(context), InvocationsCommand.Create(context), InstanceCommand.CreateOwner(context), InstanceCommand.CreateMigrate(context), InstanceCommand.CreateRetire(context), InstanceCommand.CreateReactivate(context), ManageCommand.Create(context),
        };

    private static Command CreateDeploy(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var path = new Argument<string>("package") { Description = "The package: a folder with quintet-package.json at its root, or a zip of one." };
        var thisManagerOnly = new Option<bool>("--this-manager-only") { Description = "Deploy on the manager asked alone; by default every manager deploys it (and managers that join later)." };
        var deploy = new Command("deploy", "Deploy a component package to every manager of the cluster.") { path, thisManagerOnly, endpoint, output };
        deploy.SetAction((parse, token) => DeployAsync(context, parse.GetRequiredValue(path), parse.GetValue(thisManagerOnly), parse.GetValue(endpoint), parse.GetRequiredValue(output), token));
        return deploy;
    }

    private static Command CreateUndeploy(CliContext context)
    {
        var name = new Argument<string>("name") { Description = "The package's name, as its manifest gives it." };
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var undeploy = new Command("undeploy", "Deactivate a package's instances and unload it.") { name, endpoint, output };
        undeploy.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), CallDeadline, async (channel, deadline) =>
        {
            var package = parse.GetRequiredValue(name);
            await new ComponentAdmin.ComponentAdminClient(channel).UndeployPackageAsync(new UndeployPackageRequest { Name = package }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new { package, undeployed = true });
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine($"Undeployed [bold]{Markup.Escape(package)}[/].");
            return ExitCodes.Ok;
        }));
        return undeploy;
    }

    private static Command CreateList(CliContext context)
    {
        var endpoint = AdminCall.EndpointOption();
        var output = OutputFormats.CreateOption();
        var list = new Command("list", "List the deployed packages, their classes and contracts.") { endpoint, output };
        list.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(endpoint), CallDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).ListPackagesAsync(new ListPackagesRequest(), deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

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
        return list;
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
        var file = new Option<string?>("--file", "-f") { Description = "The file to write; standard output when left out." };

        // --output names the format, as on every command; a value that is not a format is the file to write, as
        // before --file existed, so that scripts written then go on working.
        var output = new Option<string>("--output", "-o")
        {
            Description = "How to print: 'text' (the .proto itself, or the file written) or 'json' ({fileName, content, writtenTo}). A file name here is taken as --file.",
            DefaultValueFactory = _ => OutputFormats.Text,
        };
        var export = new Command("export", "Write the .proto of a deployed contract, for any gRPC client.") { contract, file, output, endpoint };
        export.SetAction((parse, token) =>
        {
            var format = parse.GetRequiredValue(output);
            var path = parse.GetValue(file);
            if (format is not (OutputFormats.Table or OutputFormats.Text or OutputFormats.Json))
            {
                if (path is not null)
                {
                    return Task.FromResult(context.Fail(ExitCodes.Usage, $"--output '{format}' is not a format ('text' or 'json'), and --file already names the file to write."));
                }

                (path, format) = (format, OutputFormats.Text);
            }

            return AdminCall.RunAsync(context, parse.GetValue(endpoint), CallDeadline, async (channel, deadline) =>
            {
                var response = await new ComponentAdmin.ComponentAdminClient(channel).ExportProtoAsync(
                    new ExportProtoRequest { Contract = parse.GetRequiredValue(contract) }, deadline: deadline, cancellationToken: token);
                if (path is not null)
                {
                    await File.WriteAllTextAsync(path, response.Content, token);
                }

                if (OutputFormats.IsJson(format))
                {
                    var json = OutputFormats.ToNode(response);
                    json["writtenTo"] = path is null ? null : Path.GetFullPath(path);
                    OutputFormats.WriteJson(context, json);
                }
                else if (path is not null)
                {
                    context.Console.MarkupLine($"Wrote {Markup.Escape(path)}.");
                }
                else
                {
                    context.Out.Write(response.Content);
                }

                return ExitCodes.Ok;
            });
        });
        return new Command("proto", "Describe contracts as .proto files.") { export };
    }

    private static async Task<int> DeployAsync(CliContext context, string path, bool thisManagerOnly, string? endpoint, string output, CancellationToken token)
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
                new DeployPackageRequest { PackageZip = ByteString.CopyFrom(zip), ThisManagerOnly = thisManagerOnly }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(output))
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            var package = response.Package;
            context.Console.MarkupLine($"Deployed [bold]{Markup.Escape(package.Name)}[/] {Markup.Escape(package.Version)}: " +
                Markup.Escape(string.Join("; ", package.Classes.Select(c => $"{c.ClassName} ({string.Join(", ", c.Contracts)})"))));
            return ExitCodes.Ok;
        });
    }
}
