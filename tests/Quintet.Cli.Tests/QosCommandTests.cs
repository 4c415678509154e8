using Grpc.Core;
using Quintet.Protocol.Admin;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

public sealed class QosCommandTests : IDisposable
{
    private const string Account = "Bank.Account";
    private const string Yaml = "replication: primaryBackup\nreplicas: 2\nretireAfterIdle: 30s\n";

    private readonly string _folder = Directory.CreateTempSubdirectory("quintet-cli-qos-").FullName;

    public void Dispose() => Directory.Delete(_folder, recursive: true);

    private string SpecFile(string name, string content)
    {
        var path = Path.Combine(_folder, name);
        File.WriteAllText(path, content);
        return path;
    }

    [Fact]
    public async Task Get_needs_a_class()
    {
        var (code, _, _) = await RunAsync("qos", "get");

        Assert.Equal(ExitCodes.Usage, code);
    }

    [Fact]
    public async Task Get_at_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var endpoint = DeadEndpoint();

        var (code, output, error) = await RunAsync("qos", "get", Account, "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
        Assert.Empty(output);
    }

    [Fact]
    public async Task Get_prints_the_spec_as_the_manager_sent_it()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.GetQos = r => new GetQosResponse { ClassName = r.ClassName, Spec = "replication: none\naffinityTo: [a]\n" };

        var (code, output, error) = await RunAsync("qos", "get", Account, "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Equal("replication: none\naffinityTo: [a]\n", output.ReplaceLineEndings("\n"));
        Assert.Equal(Account, Assert.Single(manager.Requests.OfType<GetQosRequest>()).ClassName);
    }

    [Fact]
    public async Task Get_of_an_unknown_class_prints_the_managers_refusal()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.GetQos = r => throw new RpcException(new Status(StatusCode.NotFound, $"No deployed class is named '{r.ClassName}'."));

        var (code, _, error) = await RunAsync("qos", "get", "Nope", "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("NotFound: No deployed class is named 'Nope'.", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Set_needs_a_file()
    {
        var (code, _, error) = await RunAsync("qos", "set", Account);

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--file", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Set_with_a_file_that_is_not_there_is_a_usage_error()
    {
        var missing = Path.Combine(_folder, "missing.yaml");

        var (code, _, error) = await RunAsync("qos", "set", Account, "--file", missing, "--endpoint", DeadEndpoint());

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains($"--file '{missing}' does not exist", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("spec.txt")]
    [InlineData("spec")]
    public async Task Set_with_a_file_neither_yaml_nor_json_is_a_usage_error(string name)
    {
        var file = SpecFile(name, Yaml);

        var (code, _, error) = await RunAsync("qos", "set", Account, "--file", file, "--endpoint", DeadEndpoint());

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains(".yaml, .yml or .json", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Set_at_a_dead_endpoint_says_it_cannot_reach_a_manager()
    {
        var endpoint = DeadEndpoint();

        var (code, _, error) = await RunAsync("qos", "set", Account, "--file", SpecFile("spec.yaml", Yaml), "--endpoint", endpoint);

        Assert.Equal(ExitCodes.Unreachable, code);
        Assert.Contains($"cannot reach a manager at {endpoint}", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("spec.yaml", "yaml")]
    [InlineData("spec.YML", "yaml")]
    [InlineData("spec.json", "json")]
    public async Task Set_sends_the_file_in_the_format_its_extension_names_and_prints_what_was_applied(string name, string format)
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.SetQos = _ => new SetQosResponse { Spec = "replication: primaryBackup\nreplicas: 2\n", Managers = 3 };

        var (code, output, error) = await RunAsync("qos", "set", Account, "--file", SpecFile(name, Yaml), "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Ok, code);
        Assert.Empty(error);
        Assert.Equal($"Applied the QoS spec of {Account} on 3 manager(s):\nreplication: primaryBackup\nreplicas: 2\n", output.ReplaceLineEndings("\n"));
        var request = Assert.Single(manager.Requests.OfType<SetQosRequest>());
        Assert.Equal((Account, Yaml, format, false), (request.ClassName, request.Spec, request.Format, request.ThisManagerOnly));
    }

    [Fact]
    public async Task Set_of_a_spec_with_errors_prints_each_bad_field()
    {
        await using var manager = await FakeManager.StartAsync("manager-1");
        manager.SetQos = _ => throw new RpcException(new Status(
            StatusCode.InvalidArgument,
            "The QoS spec was refused (nothing changed):\n  Bank.Account.replicas: must be 2 to 16 for primaryBackup, was 1\n  Bank.Account.retireAfterIdle: at least 1s"));

        var (code, output, error) = await RunAsync("qos", "set", Account, "--file", SpecFile("spec.yaml", Yaml), "--endpoint", manager.Endpoint);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Empty(output);
        var lines = error.ReplaceLineEndings("\n").Split('\n');
        Assert.Contains("  Bank.Account.replicas: must be 2 to 16 for primaryBackup, was 1", lines);
        Assert.Contains("  Bank.Account.retireAfterIdle: at least 1s", lines);
    }
}
