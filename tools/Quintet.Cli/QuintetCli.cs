using System.CommandLine;
using Quintet.Cli.Commands;
using Quintet.Cli.Configuration;
using Spectre.Console;

namespace Quintet.Cli;

/// <summary>The <c>quintet</c> command line.</summary>
public static class QuintetCli
{
    /// <summary>Parses and runs <paramref name="args"/>; returns the exit code (see <see cref="ExitCodes"/>).</summary>
    /// <param name="args">The arguments after <c>quintet</c>.</param>
    /// <param name="output">Where results go; the process's standard output when null.</param>
    /// <param name="error">Where errors go; the process's standard error when null.</param>
    /// <param name="cancellationToken">Stops the command as Ctrl+C would.</param>
    public static Task<int> RunAsync(string[] args, TextWriter? output = null, TextWriter? error = null, CancellationToken cancellationToken = default) =>
        RunAsync(args, output, error, CliEnvironment.Process, cancellationToken);

    /// <summary>Runs <c>quintet</c> with the environment variables of <paramref name="environment"/> in place of the process's.</summary>
    internal static Task<int> RunAsync(string[] args, TextWriter? output, TextWriter? error, CliEnvironment environment, CancellationToken cancellationToken = default) =>
        RunAsync(args, "quintet", CreateRoot, output, error, environment, cancellationToken);

    /// <summary>The command tree of <c>quintet</c>, without the global options that <see cref="RunAsync(string[], string, Func{CliContext, RootCommand}, TextWriter?, TextWriter?, CliEnvironment?, CancellationToken)"/> adds.</summary>
    internal static RootCommand CreateRoot(CliContext context) => new("Quintet: a reliable component application server for .NET.")
    {
        ClusterCommand.Create(context),
        ComponentCommand.Create(context),
        InstanceCommand.CreateInstance(context),
        ComponentCommand.CreateProto(context),
        QosCommand.Create(context),
        RolesCommand.Create(context),
        AuditCommand.Create(context),
        DiagnosticsCommand.Create(context),
        ContextCommand.Create(context),
        CertsCommand.Create(context),
    };

    /// <summary>
    /// Runs the command line that <paramref name="createRoot"/> builds for the program <paramref name="program"/>, with the
    /// console, error messages and exit codes of <c>quintet</c>.
    /// </summary>
    internal static async Task<int> RunAsync(string[] args, string program, Func<CliContext, RootCommand> createRoot, TextWriter? output = null, TextWriter? error = null, CliEnvironment? environment = null, CancellationToken cancellationToken = default)
    {
        output ??= Console.Out;
        error ??= Console.Error;
        environment ??= CliEnvironment.Process;
        var console = AnsiConsole.Create(new AnsiConsoleSettings
        {
            Out = new AnsiConsoleOutput(output),
            Ansi = ReferenceEquals(output, Console.Out) ? AnsiSupport.Detect : AnsiSupport.No,
            ColorSystem = ReferenceEquals(output, Console.Out) ? ColorSystemSupport.Detect : ColorSystemSupport.NoColors,
            Interactive = ReferenceEquals(output, Console.Out) ? InteractionSupport.Detect : InteractionSupport.No,
        });
        if (!console.Profile.Capabilities.Interactive)
        {
            // Redirected to a file or a pipe: no terminal width to fit, so keep rows on one line.
            console.Profile.Width = 200;
        }

        var context = new CliContext(console, error, program);

        var root = createRoot(context);
        var global = GlobalOptions.Create(environment);
        global.AddTo(root);

        var parse = root.Parse(args);
        if (parse.Errors.Count > 0)
        {
            foreach (var parseError in parse.Errors)
            {
                await error.WriteLineAsync($"{program}: {parseError.Message}");
            }

            await error.WriteLineAsync($"Run '{program} --help' for usage.");
            return ExitCodes.Usage;
        }

        context.Settings = global.Read(parse, environment);
        return await parse.InvokeAsync(
            new InvocationConfiguration
            {
                Output = output,
                Error = error,
                // Ctrl+C cancels the command's token; give it time to stop its managers cleanly.
                ProcessTerminationTimeout = TimeSpan.FromSeconds(60),
            },
            cancellationToken);
    }
}

/// <summary>What every command writes to: the rich console for results, a plain writer for errors.</summary>
internal sealed record CliContext(IAnsiConsole Console, TextWriter Error, string Program = "quintet")
{
    /// <summary>The global options and the environment, read once parsed.</summary>
    public CliSettings Settings { get; set; } = new();

    /// <summary>The command's target, set once <see cref="AdminCall"/> resolved it.</summary>
    public CliTarget? Target { get; set; }

    /// <summary>The credentials of the command's target, set once <see cref="AdminCall"/> resolved it.</summary>
    public CliConnection Connection { get; set; } = new();

    /// <summary>Writes raw text to the results: Spectre would read brackets (JSON, YAML flow sequences) as markup.</summary>
    public TextWriter Out => Console.Profile.Out.Writer;

    public int Fail(int exitCode, string message)
    {
        Error.WriteLine($"{Program}: {message}");
        return exitCode;
    }
}

/// <summary>The options every command takes: the saved context to use and the credentials.</summary>
internal sealed record GlobalOptions(Option<string?> Context, Option<string?> Ca, Option<string?> Cert, Option<string?> Key, Option<string?> Token)
{
    public static GlobalOptions Create(CliEnvironment environment)
    {
        var (ca, cert, key, token) = CliConnection.CreateOptions(environment);
        var context = new Option<string?>("--context")
        {
            Description = $"The saved context to use ('quintet context list'). Default: ${CliEnvironment.Context}, else the current context.",
            Recursive = true,
        };
        return new GlobalOptions(context, ca, cert, key, token);
    }

    public void AddTo(RootCommand root)
    {
        root.Options.Add(Context);
        root.Options.Add(Ca);
        root.Options.Add(Cert);
        root.Options.Add(Key);
        root.Options.Add(Token);
    }

    public CliSettings Read(ParseResult parse, CliEnvironment environment) => new()
    {
        Environment = environment,
        ContextName = parse.GetValue(Context),
        Credentials = new CliConnection
        {
            CaFile = parse.GetValue(Ca),
            CertFile = parse.GetValue(Cert),
            KeyFile = parse.GetValue(Key),
            Token = parse.GetValue(Token),
        },
        GivenCredentials = new CliConnection
        {
            CaFile = Given(parse, Ca),
            CertFile = Given(parse, Cert),
            KeyFile = Given(parse, Key),
            Token = Given(parse, Token),
        },
    };

    /// <summary>The option's value when the command line gives it; null when it holds its default (its environment variable).</summary>
    private static string? Given(ParseResult parse, Option<string?> option) =>
        parse.GetResult(option) is { Implicit: false } ? parse.GetValue(option) : null;
}
