using System.CommandLine;
using Quintet.Cli.Commands;
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
        RunAsync(args, "quintet", context => new RootCommand("Quintet: a reliable component application server for .NET.")
        {
            ClusterCommand.Create(context),
            ComponentCommand.Create(context),
            ComponentCommand.CreateProto(context),
            QosCommand.Create(context),
            RolesCommand.Create(context),
            CertsCommand.Create(context),
            AuditCommand.Create(context),
        }, output, error, cancellationToken);

    /// <summary>
    /// Runs the command line that <paramref name="createRoot"/> builds for the program <paramref name="program"/>, with the
    /// console, error messages and exit codes of <c>quintet</c>.
    /// </summary>
    internal static async Task<int> RunAsync(string[] args, string program, Func<CliContext, RootCommand> createRoot, TextWriter? output = null, TextWriter? error = null, CancellationToken cancellationToken = default)
    {
        output ??= Console.Out;
        error ??= Console.Error;
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
        var connection = CliConnection.CreateOptions();
        root.Options.Add(connection.Ca);
        root.Options.Add(connection.Cert);
        root.Options.Add(connection.Key);
        root.Options.Add(connection.Token);

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

        context.Connection = CliConnectionParsing.Read(parse, connection);
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
    /// <summary>How commands connect to managers: the global --ca, --cert, --key and --token, read once parsed.</summary>
    public CliConnection Connection { get; set; } = new();

    public int Fail(int exitCode, string message)
    {
        Error.WriteLine($"{Program}: {message}");
        return exitCode;
    }
}
