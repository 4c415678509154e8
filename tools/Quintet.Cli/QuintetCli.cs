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
    public static async Task<int> RunAsync(string[] args, TextWriter? output = null, TextWriter? error = null, CancellationToken cancellationToken = default)
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

        var context = new CliContext(console, error);

        var root = new RootCommand("Quintet: a reliable component application server for .NET.")
        {
            DemoCommand.Create(context),
            ClusterCommand.Create(context),
            ComponentCommand.Create(context),
            ComponentCommand.CreateProto(context),
            QosCommand.Create(context),
        };

        var parse = root.Parse(args);
        if (parse.Errors.Count > 0)
        {
            foreach (var parseError in parse.Errors)
            {
                await error.WriteLineAsync($"quintet: {parseError.Message}");
            }

            await error.WriteLineAsync("Run 'quintet --help' for usage.");
            return ExitCodes.Usage;
        }

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
internal sealed record CliContext(IAnsiConsole Console, TextWriter Error)
{
    public int Fail(int exitCode, string message)
    {
        Error.WriteLine($"quintet: {message}");
        return exitCode;
    }
}
