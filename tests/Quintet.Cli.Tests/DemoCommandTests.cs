using Quintet.Demo;

namespace Quintet.Cli.Tests;

/// <summary>The demo tool's command line, run in-process (the tool itself starts managers and is run by hand).</summary>
public class DemoCommandTests
{
    [Theory]
    [InlineData("0")]
    [InlineData("17")]
    public async Task Demo_refuses_a_cluster_size_outside_1_to_16(string size)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();

        var code = await QuintetCli.RunAsync(["--managers", size], "quintet-demo", DemoCommand.CreateRoot, output, error);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--managers must be between 1 and 16", error.ToString(), StringComparison.Ordinal);
        Assert.Contains("quintet-demo: ", error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_administrators_cli_has_no_demo_command()
    {
        var (code, _, error) = await CliRunner.RunAsync("demo");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("demo", error, StringComparison.Ordinal);
    }
}
