using System.Text.Json;
using Quintet.Cli.Configuration;
using static Quintet.Cli.Tests.CliRunner;

namespace Quintet.Cli.Tests;

/// <summary>Saved contexts: the file they live in, how a command picks its endpoint and credentials, and a broken file.</summary>
public sealed class ContextCommandTests : IDisposable
{
    private readonly string _folder = Directory.CreateTempSubdirectory("quintet-contexts-").FullName;

    private string ConfigFile => Path.Combine(_folder, "quintet", "config.json");

    private Dictionary<string, string> Environment(params (string Name, string Value)[] more)
    {
        var environment = new Dictionary<string, string> { [CliEnvironment.Config] = ConfigFile };
        foreach (var (name, value) in more)
        {
            environment[name] = value;
        }

        return environment;
    }

    private Task<(int ExitCode, string Output, string Error)> Cli(params string[] args) => RunAsync(Environment(), args);

    private string File(string name, string content = "x")
    {
        var path = Path.Combine(_folder, name);
        System.IO.File.WriteAllText(path, content);
        return path;
    }

    public void Dispose() => Directory.Delete(_folder, recursive: true);

    [Fact]
    public async Task Set_use_list_show_and_delete()
    {
        var first = await Cli("context", "set", "dev", "--endpoint", "http://127.0.0.1:6001");
        Assert.Equal(ExitCodes.Ok, first.ExitCode);
        Assert.Contains("it is the current context", first.Output, StringComparison.Ordinal);
        var ca = File("ca.crt");
        var token = File("token.jwt", "eyJ.abc.def\n");
        Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "prod", "--endpoint", "https://10.0.0.1:5053", "--ca", ca, "--token-file", token)).ExitCode);

        var (code, table, _) = await Cli("context", "list");
        Assert.Equal(ExitCodes.Ok, code);
        Assert.Matches(@"\*\s*│\s*dev\s*│\s*http://127\.0\.0\.1:6001", table);
        Assert.Matches(@"│\s*│\s*prod\s*│\s*https://10\.0\.0\.1:5053\s*│\s*ca .*ca\.crt, token from .*token\.jwt", table);

        Assert.Equal(ExitCodes.Ok, (await Cli("context", "use", "prod")).ExitCode);
        var (_, listed, _) = await Cli("context", "list", "-o", "json");
        using (var json = JsonDocument.Parse(listed))
        {
            Assert.Equal("prod", json.RootElement.GetProperty("currentContext").GetString());
            var prod = json.RootElement.GetProperty("contexts").EnumerateArray().Single(c => c.GetProperty("name").GetString() == "prod");
            Assert.True(prod.GetProperty("current").GetBoolean());
            Assert.Equal(ca, prod.GetProperty("ca").GetString());
            Assert.Equal(token, prod.GetProperty("tokenFile").GetString());
            Assert.DoesNotContain("eyJ", listed, StringComparison.Ordinal);
        }

        var (_, shown, _) = await Cli("context", "show", "-o", "json");
        using (var json = JsonDocument.Parse(shown))
        {
            Assert.Equal("https://10.0.0.1:5053", json.RootElement.GetProperty("context").GetProperty("endpoint").GetString());
            Assert.Equal(ConfigFile, json.RootElement.GetProperty("configFile").GetString());
        }

        var (shownDev, devTable, _) = await Cli("context", "show", "dev");
        Assert.Equal(ExitCodes.Ok, shownDev);
        Assert.Matches(@"endpoint\s*│\s*http://127\.0\.0\.1:6001", devTable);

        var deleted = await Cli("context", "delete", "prod");
        Assert.Equal(ExitCodes.Ok, deleted.ExitCode);
        Assert.Contains("no context is current now", deleted.Output, StringComparison.Ordinal);
        var (noCurrent, _, error) = await Cli("context", "show");
        Assert.Equal(ExitCodes.Failed, noCurrent);
        Assert.Contains("no context is current", error, StringComparison.Ordinal);
        var (unknown, _, unknownError) = await Cli("context", "use", "prod");
        Assert.Equal(ExitCodes.Usage, unknown);
        Assert.Contains("there is no context 'prod'", unknownError, StringComparison.Ordinal);
        Assert.Contains("its contexts: dev", unknownError, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_file_is_owner_only_and_replaced_whole()
    {
        Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "dev", "--endpoint", "http://127.0.0.1:6001")).ExitCode);
        if (!OperatingSystem.IsWindows())
        {
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, System.IO.File.GetUnixFileMode(ConfigFile));
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute, System.IO.File.GetUnixFileMode(Path.GetDirectoryName(ConfigFile)!));

            // A file someone made readable to others: the next write replaces it with an owner-only one.
            System.IO.File.SetUnixFileMode(ConfigFile, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.GroupRead | UnixFileMode.OtherRead);
            var warned = await Cli("context", "set", "test", "--endpoint", "http://127.0.0.1:6002");
            Assert.Contains("may be read by others", warned.Error, StringComparison.Ordinal);
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, System.IO.File.GetUnixFileMode(ConfigFile));
        }

        // Written through a temporary file renamed over it: nothing else is left beside it.
        Assert.Equal(["config.json"], Directory.GetFiles(Path.GetDirectoryName(ConfigFile)!).Select(Path.GetFileName));
        using var json = JsonDocument.Parse(await System.IO.File.ReadAllTextAsync(ConfigFile));
        Assert.Equal("dev", json.RootElement.GetProperty("currentContext").GetString());
    }

    [Theory]
    [InlineData("{\n  \"currentContext\": \"dev\",\n  \"contexts\": {\n    \"dev\": { \"endpoint\": \"http://127.0.0.1:6001\" \n    \"x\": 1 }\n  }\n}\n", 5, "is not valid")]
    [InlineData("{\n  \"contexts\": {\n    \"dev\": { \"endpoint\": \"http://127.0.0.1:6001\", \"token\": \"abc\" }\n  }\n}\n", 3, "is not valid")]
    [InlineData("{\n  \"contexts\": {\n    \"dev\": { \"endpoint\": \"ftp://x\" }\n  }\n}\n", 3, "context 'dev' has no endpoint, or one that is not an http:// or https:// address")]
    [InlineData("{\n  \"currentContext\": \"prod\",\n  \"contexts\": {}\n}\n", 2, "currentContext is 'prod', which is not among its contexts")]
    public async Task A_broken_file_is_named_with_its_line_and_no_stack_trace(string content, int line, string reason)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(ConfigFile)!);
        await System.IO.File.WriteAllTextAsync(ConfigFile, content);

        foreach (var args in new[] { new[] { "context", "list" }, ["cluster", "show"] })
        {
            var (code, output, error) = await Cli(args);

            Assert.Equal(ExitCodes.Config, code);
            Assert.Empty(output);
            Assert.Contains($"{ConfigFile}:{line}", error, StringComparison.Ordinal);
            Assert.Contains(reason, error, StringComparison.Ordinal);
            Assert.DoesNotContain("   at ", error, StringComparison.Ordinal);
            Assert.DoesNotContain("Exception", error, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task A_broken_file_does_not_stop_a_command_that_names_its_endpoint()
    {
        Directory.CreateDirectory(Path.GetDirectoryName(ConfigFile)!);
        await System.IO.File.WriteAllTextAsync(ConfigFile, "{ broken");
        await using var manager = await FakeManager.StartAsync("manager-1");

        var (code, _, error) = await Cli("cluster", "show", "--endpoint", manager.Endpoint);

        Assert.True(code == ExitCodes.Ok, error);
    }

    [Fact]
    public async Task Set_refuses_what_does_not_go_together()
    {
        var ca = File("ca.crt");
        var (http, _, httpError) = await Cli("context", "set", "dev", "--endpoint", "http://127.0.0.1:6001", "--ca", ca);
        Assert.Equal(ExitCodes.Usage, http);
        Assert.Contains("credentials are never sent in the clear", httpError, StringComparison.Ordinal);

        var (half, _, halfError) = await Cli("context", "set", "dev", "--endpoint", "https://127.0.0.1:6001", "--cert", ca);
        Assert.Equal(ExitCodes.Usage, half);
        Assert.Contains("--cert and --key go together", halfError, StringComparison.Ordinal);

        var (missing, _, missingError) = await Cli("context", "set", "dev", "--endpoint", "https://127.0.0.1:6001", "--token-file", Path.Combine(_folder, "nope"));
        Assert.Equal(ExitCodes.Usage, missing);
        Assert.Contains("--token-file", missingError, StringComparison.Ordinal);

        var (notUrl, _, _) = await Cli("context", "set", "dev", "--endpoint", "10.0.0.1:5053");
        Assert.Equal(ExitCodes.Usage, notUrl);
        Assert.False(System.IO.File.Exists(ConfigFile));
    }

    [Fact]
    public async Task Set_saves_the_credentials_given_on_its_command_line_not_those_of_the_environment()
    {
        var ca = File("ca.crt");
        var environment = Environment((CliEnvironment.Ca, ca));

        Assert.Equal(ExitCodes.Ok, (await RunAsync(environment, "context", "set", "prod", "--endpoint", "https://10.0.0.1:5053")).ExitCode);

        using var json = JsonDocument.Parse(await System.IO.File.ReadAllTextAsync(ConfigFile));
        Assert.False(json.RootElement.GetProperty("contexts").GetProperty("prod").TryGetProperty("ca", out _));
    }

    [Fact]
    public async Task The_endpoint_is_the_flag_else_QUINTET_ENDPOINT_else_the_context()
    {
        await using var fromContext = await FakeManager.StartAsync("from-context");
        await using var fromVariable = await FakeManager.StartAsync("from-variable");
        await using var fromFlag = await FakeManager.StartAsync("from-flag");
        await using var named = await FakeManager.StartAsync("named-context");
        Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "a", "--endpoint", fromContext.Endpoint)).ExitCode);
        Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "b", "--endpoint", named.Endpoint)).ExitCode);

        async Task<string> AnsweredBy(Dictionary<string, string> environment, params string[] more)
        {
            var (code, output, error) = await RunAsync(environment, ["cluster", "show", "-o", "json", .. more]);
            Assert.True(code == ExitCodes.Ok, error);
            using var json = JsonDocument.Parse(output);
            return json.RootElement.GetProperty("managers")[0].GetProperty("report").GetProperty("nodeName").GetString()!;
        }

        Assert.Equal("from-context", await AnsweredBy(Environment()));
        Assert.Equal("named-context", await AnsweredBy(Environment(), "--context", "b"));
        Assert.Equal("named-context", await AnsweredBy(Environment((CliEnvironment.Context, "b"))));
        Assert.Equal("from-variable", await AnsweredBy(Environment((CliEnvironment.Endpoint, fromVariable.Endpoint))));
        Assert.Equal("from-flag", await AnsweredBy(Environment((CliEnvironment.Endpoint, fromVariable.Endpoint)), "--endpoint", fromFlag.Endpoint));

        var (unknown, _, error) = await Cli("cluster", "show", "--context", "c");
        Assert.Equal(ExitCodes.Usage, unknown);
        Assert.Contains("there is no context 'c'", error, StringComparison.Ordinal);

        // A context that points nowhere: the message says where the endpoint came from.
        var dead = DeadEndpoint();
        Assert.Equal(ExitCodes.Ok, (await Cli("context", "set", "dead", "--endpoint", dead, "--use")).ExitCode);
        var (unreachable, _, deadError) = await Cli("cluster", "show");
        Assert.Equal(ExitCodes.Unreachable, unreachable);
        Assert.Contains($"cannot reach a manager at {dead} (from context 'dead')", deadError, StringComparison.Ordinal);
    }

    [Fact]
    public void A_context_gives_its_credentials_to_its_own_endpoint_or_when_named_and_options_override_them()
    {
        var token = File("token.jwt", "  eyJ.token.sig\n");
        var config = new CliConfig { CurrentContext = "prod" };
        config.Contexts["prod"] = new SavedContext { Endpoint = "https://10.0.0.1:5053", Ca = "/c/ca.crt", Cert = "/c/ops.crt", Key = "/c/ops.key", TokenFile = token };
        Directory.CreateDirectory(Path.GetDirectoryName(ConfigFile)!);
        CliConfigFile.Save(ConfigFile, config);
        var environment = new CliEnvironment(name => Environment().GetValueOrDefault(name));

        var current = CliTarget.Resolve(new CliSettings { Environment = environment }, endpointFlag: null);
        Assert.Equal(("https://10.0.0.1:5053", "context 'prod'", "prod"), (current.Endpoint, current.EndpointSource, current.ContextName));
        Assert.Equal(("/c/ca.crt", "/c/ops.crt", "/c/ops.key", "eyJ.token.sig"), (current.Connection.CaFile, current.Connection.CertFile, current.Connection.KeyFile, current.Connection.Token));

        // Another endpoint while the context is merely current: it may be another cluster, so nothing of the context goes there.
        var elsewhere = CliTarget.Resolve(new CliSettings { Environment = environment }, "https://10.9.9.9:5053");
        Assert.Equal(("--endpoint", null), (elsewhere.EndpointSource, elsewhere.ContextName));
        Assert.Null(elsewhere.Connection.CaFile ?? elsewhere.Connection.CertFile ?? elsewhere.Connection.Token);

        // Named: its credentials go to the endpoint given (another manager of the same cluster).
        var named = CliTarget.Resolve(new CliSettings { Environment = environment, ContextName = "prod" }, "https://10.0.0.2:5053");
        Assert.Equal(("https://10.0.0.2:5053", "/c/ca.crt", "eyJ.token.sig"), (named.Endpoint, named.Connection.CaFile, named.Connection.Token));

        // Options (or their variables) override field by field; the certificate and key as a pair.
        var overridden = CliTarget.Resolve(
            new CliSettings { Environment = environment, Credentials = new Commands.CliConnection { CaFile = "/o/ca.crt", CertFile = "/o/me.crt", Token = "flag-token" } },
            endpointFlag: null);
        Assert.Equal(("/o/ca.crt", "/o/me.crt", null, "flag-token"), (overridden.Connection.CaFile, overridden.Connection.CertFile, overridden.Connection.KeyFile, overridden.Connection.Token));

        // Nothing configured at all: the default endpoint, no credentials.
        var none = CliTarget.Resolve(new CliSettings { Environment = new CliEnvironment(name => name == CliEnvironment.Config ? Path.Combine(_folder, "none.json") : null) }, endpointFlag: null);
        Assert.Equal((CliTarget.DefaultEndpoint, "the default"), (none.Endpoint, none.EndpointSource));

        System.IO.File.Delete(token);
        var problem = Assert.Throws<CliProblem>(() => CliTarget.Resolve(new CliSettings { Environment = environment }, endpointFlag: null));
        Assert.Equal(ExitCodes.Usage, problem.ExitCode);
        Assert.Contains("cannot read the token file", problem.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void The_file_is_found_by_QUINTET_CONFIG_else_XDG_CONFIG_HOME_else_HOME()
    {
        Assert.Equal(Path.GetFullPath("x/config.json"), new CliEnvironment(n => n == CliEnvironment.Config ? "x/config.json" : null).ConfigFile());
        if (OperatingSystem.IsWindows())
        {
            Assert.Equal(Path.Combine(@"C:\Users\a\AppData\Roaming", "quintet", "config.json"), new CliEnvironment(n => n == "APPDATA" ? @"C:\Users\a\AppData\Roaming" : null).ConfigFile());
            return;
        }

        Assert.Equal("/xdg/quintet/config.json", new CliEnvironment(n => n switch { "XDG_CONFIG_HOME" => "/xdg", "HOME" => "/home/a", _ => null }).ConfigFile());
        Assert.Equal("/home/a/.config/quintet/config.json", new CliEnvironment(n => n switch { "XDG_CONFIG_HOME" => "relative", "HOME" => "/home/a", _ => null }).ConfigFile());
        Assert.Equal("/home/a/.config/quintet/config.json", new CliEnvironment(n => n == "HOME" ? "/home/a" : null).ConfigFile());
    }
}
