using System.CommandLine;
using Quintet.Cli.Configuration;
using Quintet.Cli.Rendering;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet context ...</c>: saved contexts, kubeconfig style. Each names a cluster's endpoint and the credentials
/// to present to it; the current one is used by every command that names no endpoint
/// (<see cref="CliTarget.Resolve"/>). Kept in the configuration file (<see cref="CliEnvironment.ConfigFile"/>).
/// </summary>
internal static class ContextCommand
{
    public static Command Create(CliContext context) =>
        new("context", "Save, list and switch between clusters and their credentials (kept in $QUINTET_CONFIG, else ~/.config/quintet/config.json).")
        {
            CreateSet(context), CreateUse(context), CreateList(context), CreateShow(context), CreateDelete(context),
        };

    private static Command CreateSet(CliContext context)
    {
        var name = NameArgument();
        var endpoint = new Option<string>("--endpoint", "-e") { Description = "The gRPC endpoint of any manager of the cluster.", Required = true };

        // The credentials are the global --ca, --cert and --key as given on this command line (never their environment
        // variables, which a context would then capture unseen), and the token by its file.
        var tokenFile = new Option<string?>("--token-file") { Description = "A file holding a bearer token, read at every command (a renewed token needs no new context)." };
        var use = new Option<bool>("--use") { Description = "Make it the current context (the first context saved becomes current anyway)." };
        var output = OutputFormats.CreateOption();
        var command = new Command("set", "Save a context, or replace the one of that name: a cluster's endpoint and the credentials for it (--ca, --cert and --key as given here, or --token-file).")
        {
            name, endpoint, tokenFile, use, output,
        };
        command.SetAction(parse => Run(context, (path, config) =>
        {
            var saved = new SavedContext
            {
                Endpoint = parse.GetRequiredValue(endpoint),
                Ca = FullPath(context.Settings.GivenCredentials.CaFile, "--ca"),
                Cert = FullPath(context.Settings.GivenCredentials.CertFile, "--cert"),
                Key = FullPath(context.Settings.GivenCredentials.KeyFile, "--key"),
                TokenFile = FullPath(parse.GetValue(tokenFile), "--token-file"),
            };
            if (!CliConfigFile.IsEndpoint(saved.Endpoint))
            {
                throw new CliProblem(ExitCodes.Usage, $"--endpoint '{saved.Endpoint}' is not an http:// or https:// address (for example {CliTarget.DefaultEndpoint}).");
            }

            if ((saved.Cert is null) != (saved.Key is null))
            {
                throw new CliProblem(ExitCodes.Usage, "--cert and --key go together: give both, or neither.");
            }

            if (saved.Endpoint.StartsWith("http:", StringComparison.OrdinalIgnoreCase) && (saved.Ca ?? saved.Cert ?? saved.TokenFile) is not null)
            {
                throw new CliProblem(ExitCodes.Usage, $"'{saved.Endpoint}' is http, but credentials say the cluster is secured: save its https:// endpoint (credentials are never sent in the clear).");
            }

            var contextName = parse.GetRequiredValue(name);
            var replaced = config.Contexts.ContainsKey(contextName);
            config.Contexts[contextName] = saved;
            var current = parse.GetValue(use) || config.CurrentContext is null;
            if (current)
            {
                config.CurrentContext = contextName;
            }

            CliConfigFile.Save(path, config);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new { configFile = path, context = Describe(contextName, saved, config), replaced });
                return;
            }

            context.Console.MarkupLine(Markup.Escape($"{(replaced ? "Replaced" : "Saved")} context '{contextName}' ({saved.Endpoint}) in {path}" + (current ? "; it is the current context." : ".")));
        }));
        return command;
    }

    private static Command CreateUse(CliContext context)
    {
        var name = NameArgument();
        var output = OutputFormats.CreateOption();
        var command = new Command("use", "Make a saved context the current one: commands that name no endpoint talk to its cluster.") { name, output };
        command.SetAction(parse => Run(context, (path, config) =>
        {
            var contextName = parse.GetRequiredValue(name);
            var saved = Find(path, config, contextName);
            config.CurrentContext = contextName;
            CliConfigFile.Save(path, config);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new { configFile = path, currentContext = contextName });
                return;
            }

            context.Console.MarkupLine(Markup.Escape($"Now using context '{contextName}' ({saved.Endpoint})."));
        }));
        return command;
    }

    private static Command CreateList(CliContext context)
    {
        var output = OutputFormats.CreateOption();
        var command = new Command("list", "List the saved contexts; the current one is marked with *.") { output };
        command.SetAction(parse => Run(context, (path, config) =>
        {
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new
                {
                    configFile = path,
                    currentContext = config.CurrentContext,
                    contexts = config.Contexts.Select(c => Describe(c.Key, c.Value, config)).ToList(),
                });
                return;
            }

            var table = new Table().AddColumns("current", "name", "endpoint", "credentials");
            foreach (var (contextName, saved) in config.Contexts)
            {
                table.AddRow(contextName == config.CurrentContext ? "*" : "", Markup.Escape(contextName), Markup.Escape(saved.Endpoint), Markup.Escape(Credentials(saved)));
            }

            table.Caption(Markup.Escape($"{config.Contexts.Count} context(s) in {path}"));
            context.Console.Write(table);
        }));
        return command;
    }

    private static Command CreateShow(CliContext context)
    {
        var name = new Argument<string?>("name") { Description = "The context; the current one (or --context) when left out.", Arity = ArgumentArity.ZeroOrOne };
        var output = OutputFormats.CreateOption();
        var command = new Command("show", "Print a saved context: its endpoint and the files of its credentials.") { name, output };
        command.SetAction(parse => Run(context, (path, config) =>
        {
            var contextName = parse.GetValue(name) ?? context.Settings.ContextName ?? context.Settings.Environment.Get(CliEnvironment.Context) ?? config.CurrentContext
                ?? throw new CliProblem(ExitCodes.Failed, $"no context is current in {path}: 'quintet context use <name>' picks one ('quintet context list' shows them).");
            var saved = Find(path, config, contextName);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new { configFile = path, context = Describe(contextName, saved, config) });
                return;
            }

            var table = new Table().AddColumns("field", "value").Title(Markup.Escape($"context {contextName}" + (contextName == config.CurrentContext ? " (current)" : "")));
            table.AddRow("endpoint", Markup.Escape(saved.Endpoint));
            table.AddRow("ca", Markup.Escape(saved.Ca ?? "-"));
            table.AddRow("cert", Markup.Escape(saved.Cert ?? "-"));
            table.AddRow("key", Markup.Escape(saved.Key ?? "-"));
            table.AddRow("token file", Markup.Escape(saved.TokenFile ?? "-"));
            table.Caption(Markup.Escape(path));
            context.Console.Write(table);
        }));
        return command;
    }

    private static Command CreateDelete(CliContext context)
    {
        var name = NameArgument();
        var output = OutputFormats.CreateOption();
        var command = new Command("delete", "Delete a saved context (the files it names are left alone).") { name, output };
        command.SetAction(parse => Run(context, (path, config) =>
        {
            var contextName = parse.GetRequiredValue(name);
            Find(path, config, contextName);
            config.Contexts.Remove(contextName);
            var wasCurrent = config.CurrentContext == contextName;
            if (wasCurrent)
            {
                config.CurrentContext = null;
            }

            CliConfigFile.Save(path, config);
            if (OutputFormats.IsJson(parse.GetValue(output)))
            {
                OutputFormats.WriteJson(context, new { configFile = path, deleted = contextName, currentContext = config.CurrentContext });
                return;
            }

            context.Console.MarkupLine(Markup.Escape($"Deleted context '{contextName}'" + (wasCurrent ? "; no context is current now ('quintet context use <name>')." : ".")));
        }));
        return command;
    }

    private static Argument<string> NameArgument() => new("name") { Description = "The context's name, for example prod." };

    /// <summary>A context as the JSON output gives it (credentials by file: no token is ever printed).</summary>
    private static object Describe(string name, SavedContext saved, CliConfig config) => new
    {
        name,
        current = name == config.CurrentContext,
        endpoint = saved.Endpoint,
        ca = saved.Ca,
        cert = saved.Cert,
        key = saved.Key,
        tokenFile = saved.TokenFile,
    };

    private static string Credentials(SavedContext saved)
    {
        List<string> parts = [];
        if (saved.Ca is not null)
        {
            parts.Add($"ca {saved.Ca}");
        }

        if (saved.Cert is not null)
        {
            parts.Add($"cert {saved.Cert}");
        }

        if (saved.TokenFile is not null)
        {
            parts.Add($"token from {saved.TokenFile}");
        }

        return parts.Count == 0 ? "none" : string.Join(", ", parts);
    }

    private static SavedContext Find(string path, CliConfig config, string name) =>
        config.Contexts.TryGetValue(name, out var saved)
            ? saved
            : throw new CliProblem(ExitCodes.Usage, $"there is no context '{name}' in {path} ({(config.Contexts.Count == 0 ? "it has none" : "its contexts: " + string.Join(", ", config.Contexts.Keys))}).");

    /// <summary>An absolute path for a file saved in a context, which must exist (a typo is caught now, not at the next command).</summary>
    private static string? FullPath(string? path, string option)
    {
        if (path is null)
        {
            return null;
        }

        var full = Path.GetFullPath(path);
        return File.Exists(full) ? full : throw new CliProblem(ExitCodes.Usage, $"{option} '{path}' does not exist.");
    }

    /// <summary>Runs <paramref name="work"/> on the configuration file, turning its problems into exit codes.</summary>
    private static int Run(CliContext context, Action<string, CliConfig> work)
    {
        var path = context.Settings.Environment.ConfigFile();
        try
        {
            var config = CliConfigFile.Load(path);
            if (CliConfigFile.PermissionWarning(path) is { } warning)
            {
                context.Error.WriteLine($"{context.Program}: {warning}");
            }

            work(path, config);
            return ExitCodes.Ok;
        }
        catch (CliConfigException ex)
        {
            return context.Fail(ExitCodes.Config, ex.Message);
        }
        catch (CliProblem ex)
        {
            return context.Fail(ex.ExitCode, ex.Message);
        }
    }
}
