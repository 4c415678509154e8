using System.CommandLine;
using System.Reflection;
using System.Text.RegularExpressions;
using Google.Protobuf.Reflection;
using Quintet.Cli.Configuration;
using Quintet.Protocol.Admin;

namespace Quintet.Cli.Tests;

/// <summary>docs/cli.md against the code, so that the two cannot drift apart.</summary>
public sealed partial class CliDocumentationTests
{
    private static readonly string Doc = File.ReadAllText(Path.Combine(RepositoryRoot(), "docs", "cli.md"));

    private static readonly Dictionary<string, Command> Tree = JsonOutputTests
        .Leaves(QuintetCli.CreateRoot(new CliContext(Spectre.Console.AnsiConsole.Console, TextWriter.Null)))
        .ToDictionary(l => l.Path, l => l.Command);

    /// <summary>The rows of the commands table: the command, and the whole row.</summary>
    private static Dictionary<string, string> CommandRows() =>
        Doc.Split('\n').Select(line => (Line: line, Match: CommandRow().Match(line))).Where(r => r.Match.Success)
            .ToDictionary(r => r.Match.Groups[1].Value, r => r.Line);

    [Fact]
    public void Every_command_is_in_the_table_with_its_arguments_and_options_and_every_row_is_a_command()
    {
        var rows = CommandRows();

        Assert.Empty(Tree.Keys.Except(rows.Keys));
        Assert.Empty(rows.Keys.Except(Tree.Keys));
        string[] everywhere = ["--output", "--help"];
        foreach (var (path, command) in Tree)
        {
            var row = rows[path];
            foreach (var option in command.Options.Where(o => !everywhere.Contains(o.Name)))
            {
                Assert.True(row.Contains($"`{option.Name}`", StringComparison.Ordinal), $"docs/cli.md's row of '{path}' lacks its option {option.Name}");
            }

            foreach (var argument in command.Arguments)
            {
                Assert.True(row.Contains($"<{argument.Name}>", StringComparison.Ordinal), $"docs/cli.md's row of '{path}' lacks its argument <{argument.Name}>");
            }
        }
    }

    [Fact]
    public void Every_global_option_and_environment_variable_is_documented()
    {
        var root = QuintetCli.CreateRoot(new CliContext(Spectre.Console.AnsiConsole.Console, TextWriter.Null));
        GlobalOptions.Create(CliEnvironment.Process).AddTo(root);
        foreach (var option in root.Options.Where(o => o.Name.StartsWith("--", StringComparison.Ordinal)))
        {
            Assert.Contains($"`{option.Name}`", Doc, StringComparison.Ordinal);
        }

        var variables = typeof(CliEnvironment).GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsLiteral).Select(f => (string)f.GetRawConstantValue()!).ToList();
        Assert.Equal(7, variables.Count);
        foreach (var variable in variables)
        {
            Assert.Matches($@"\| `{variable}` \|", Doc);
        }
    }

    [Fact]
    public void Every_exit_code_is_in_the_table_by_value_and_name()
    {
        var codes = typeof(ExitCodes).GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsLiteral).ToList();
        Assert.Contains(codes, c => c.Name == nameof(ExitCodes.Config));
        foreach (var code in codes)
        {
            Assert.Matches($@"(?m)^\| {code.GetRawConstantValue()} \| `{code.Name}` \|", Doc);
        }

        var documented = ExitCodeRow().Matches(Doc).Select(m => m.Groups[2].Value).ToList();
        Assert.Equal(codes.Select(c => c.Name).Order(), documented.Order());
    }

    [Fact]
    public void Every_admin_method_the_managers_serve_has_a_command_named_in_the_coverage_table()
    {
        var methods = typeof(ClusterAdmin).Assembly.GetTypes()
            .Select(t => t.GetProperty("Descriptor", BindingFlags.Public | BindingFlags.Static))
            .Where(p => p?.PropertyType == typeof(ServiceDescriptor))
            .Select(p => (ServiceDescriptor)p!.GetValue(null)!)
            .SelectMany(s => s.Methods.Select(m => $"{s.FullName}/{m.Name}"))
            .ToList();
        var covered = Doc.Split('\n').Select(line => CoverageRow().Match(line)).Where(m => m.Success)
            .ToDictionary(m => m.Groups[1].Value, m => m.Groups[2].Value);

        Assert.True(methods.Count >= 25, $"only {methods.Count} methods found");
        Assert.Empty(methods.Except(covered.Keys));
        Assert.Empty(covered.Keys.Except(methods));
        foreach (var (method, command) in covered)
        {
            Assert.True(Tree.ContainsKey(command), $"docs/cli.md covers {method} with '{command}', which is no command");
        }
    }

    private static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Quintet.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Quintet.sln above {AppContext.BaseDirectory}.");
    }

    [GeneratedRegex(@"^\| `(quintet [a-z][a-z\- ]*)` \|")]
    private static partial Regex CommandRow();

    [GeneratedRegex(@"^\| `([a-z0-9.]+\.[A-Za-z]+/[A-Za-z]+)` \| `(quintet [a-z\- ]+)` \|")]
    private static partial Regex CoverageRow();

    [GeneratedRegex(@"(?m)^\| (\d+) \| `([A-Za-z]+)` \|")]
    private static partial Regex ExitCodeRow();
}
