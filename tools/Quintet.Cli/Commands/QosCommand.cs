using System.CommandLine;
using Quintet.Cli.Rendering;
using Quintet.Protocol.Admin;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary><c>quintet qos ...</c>: read and change the QoS spec of a deployed component class.</summary>
internal static class QosCommand
{
    private static readonly TimeSpan GetDeadline = TimeSpan.FromSeconds(10);

    // The manager asked passes the change on to every other manager, allowing each 30 s.
    private static readonly TimeSpan SetDeadline = TimeSpan.FromSeconds(40);

    public static Command Create(CliContext context)
    {
        var getEndpoint = AdminCall.EndpointOption();
        var getClass = ClassArgument();
        var getOutput = OutputFormats.CreateOption();
        var get = new Command("get", "Print a class's QoS spec as YAML, as the manager applies it.") { getClass, getEndpoint, getOutput };
        get.SetAction((parse, token) => AdminCall.RunAsync(context, parse.GetValue(getEndpoint), GetDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).GetQosAsync(
                new GetQosRequest { ClassName = parse.GetRequiredValue(getClass) }, deadline: deadline, cancellationToken: token);
            if (OutputFormats.IsJson(parse.GetValue(getOutput)))
            {
                OutputFormats.WriteJson(context, response);
                return ExitCodes.Ok;
            }

            WriteSpec(context, response.Spec);
            return ExitCodes.Ok;
        }));

        var setEndpoint = AdminCall.EndpointOption();
        var setClass = ClassArgument();
        var file = new Option<string>("--file", "-f")
        {
            Description = "The whole spec (its fields, not keyed by class), in YAML (.yaml, .yml) or JSON (.json); fields left out take their defaults.",
            Required = true,
        };
        var setOutput = OutputFormats.CreateOption();
        var set = new Command("set", "Replace a class's QoS spec on every manager; a spec with errors changes nothing.") { setClass, file, setEndpoint, setOutput };
        set.SetAction((parse, token) => SetAsync(context, parse.GetRequiredValue(setClass), parse.GetRequiredValue(file), parse.GetValue(setEndpoint), OutputFormats.IsJson(parse.GetValue(setOutput)), token));

        return new Command("qos", "Read and change the QoS spec of a deployed component class.") { get, set };
    }

    private static Argument<string> ClassArgument() =>
        new("class") { Description = "The component class, for example Samples.Counter.CounterComponent." };

    private static async Task<int> SetAsync(CliContext context, string className, string file, string? endpoint, bool json, CancellationToken token)
    {
        if (!File.Exists(file))
        {
            return context.Fail(ExitCodes.Usage, $"--file '{file}' does not exist.");
        }

        var format = Path.GetExtension(file).ToUpperInvariant() switch
        {
            ".YAML" or ".YML" => "yaml",
            ".JSON" => "json",
            _ => null,
        };
        if (format is null)
        {
            return context.Fail(ExitCodes.Usage, $"--file '{file}' is neither YAML nor JSON: a QoS spec file ends in .yaml, .yml or .json.");
        }

        string spec;
        try
        {
            spec = await File.ReadAllTextAsync(file, token);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            return context.Fail(ExitCodes.Failed, $"cannot read --file '{file}': {ex.Message}");
        }

        // A refused spec comes back as INVALID_ARGUMENT whose message lists each bad field on a line of its own, which
        // the generic refusal message prints as it is.
        return await AdminCall.RunAsync(context, endpoint, SetDeadline, async (channel, deadline) =>
        {
            var response = await new ComponentAdmin.ComponentAdminClient(channel).SetQosAsync(
                new SetQosRequest { ClassName = className, Spec = spec, Format = format }, deadline: deadline, cancellationToken: token);
            if (json)
            {
                var node = OutputFormats.ToNode(response);
                node["className"] = className;
                OutputFormats.WriteJson(context, node);
                return ExitCodes.Ok;
            }

            context.Console.MarkupLine($"Applied the QoS spec of [bold]{Markup.Escape(className)}[/] on {response.Managers} manager(s):");
            WriteSpec(context, response.Spec);
            return ExitCodes.Ok;
        });
    }

    /// <summary>Writes the spec as it is: Spectre would read YAML flow sequences (<c>[a, b]</c>) as markup.</summary>
    private static void WriteSpec(CliContext context, string spec)
    {
        var writer = context.Out;
        writer.Write(spec);
        if (!spec.EndsWith('\n'))
        {
            writer.WriteLine();
        }
    }
}
