using Quintet.Cli.Commands;

namespace Quintet.Cli.Configuration;

/// <summary>The manager a command talks to, the credentials it presents, and where each came from.</summary>
/// <param name="Endpoint">The manager's gRPC endpoint.</param>
/// <param name="EndpointSource">Where the endpoint came from, in the user's terms: <c>--endpoint</c>, <c>QUINTET_ENDPOINT</c>, <c>context 'prod'</c> or <c>the default</c>.</param>
/// <param name="ContextName">The saved context whose credentials are used; null for none.</param>
/// <param name="Connection">The credentials.</param>
internal sealed record CliTarget(string Endpoint, string EndpointSource, string? ContextName, CliConnection Connection)
{
    /// <summary>The endpoint when nothing names one: a manager on this machine with its default port.</summary>
    public const string DefaultEndpoint = "http://127.0.0.1:5053";

    /// <summary>
    /// Resolves the target of a command. The endpoint is the first of <c>--endpoint</c>, <c>QUINTET_ENDPOINT</c>, the
    /// saved context (<c>--context</c>, else <c>QUINTET_CONTEXT</c>, else the current one) and the default. Each
    /// credential is the first of its option, its environment variable and the context's; the certificate and its key
    /// are taken as a pair. A context's credentials go only where they belong: to its own endpoint, or to another
    /// endpoint when the context was named (<c>--context</c> or <c>QUINTET_CONTEXT</c>); never to an endpoint given
    /// with <c>--endpoint</c> while a context is merely current, which may be another cluster.
    /// </summary>
    /// <param name="settings">The global options and the environment.</param>
    /// <param name="endpointFlag">The command's <c>--endpoint</c>, if given.</param>
    /// <exception cref="CliConfigException">The configuration file was needed and cannot be read.</exception>
    /// <exception cref="CliProblem">A named context does not exist, or its token file cannot be read.</exception>
    public static CliTarget Resolve(CliSettings settings, string? endpointFlag)
    {
        var environment = settings.Environment;
        var named = settings.ContextName ?? environment.Get(CliEnvironment.Context);
        var explicitEndpoint = endpointFlag ?? environment.Get(CliEnvironment.Endpoint);

        // The file is read only when a context may be used, so that a script that names its endpoint is not stopped by
        // a file it does not use.
        string? contextName = null;
        SavedContext? saved = null;
        if (named is not null || explicitEndpoint is null)
        {
            var path = environment.ConfigFile();
            var config = CliConfigFile.Load(path);
            if (named is not null)
            {
                if (!config.Contexts.TryGetValue(named, out saved))
                {
                    var known = config.Contexts.Count == 0 ? "it has none" : "its contexts: " + string.Join(", ", config.Contexts.Keys);
                    throw new CliProblem(ExitCodes.Usage, $"there is no context '{named}' in {path} ({known}); 'quintet context set {named} --endpoint ...' saves one.");
                }

                contextName = named;
            }
            else if (config.CurrentContext is { } current)
            {
                saved = config.Contexts[current];
                contextName = current;
            }
        }

        var (endpoint, source) =
            endpointFlag is not null ? (endpointFlag, "--endpoint")
            : environment.Get(CliEnvironment.Endpoint) is { } variable ? (variable, CliEnvironment.Endpoint)
            : saved is not null ? (saved.Endpoint, $"context '{contextName}'")
            : (DefaultEndpoint, "the default");

        var useSaved = saved is not null && (named is not null || explicitEndpoint is null);
        var flags = settings.Credentials;
        var pairGiven = flags.CertFile is not null || flags.KeyFile is not null;
        var connection = new CliConnection
        {
            CaFile = flags.CaFile ?? (useSaved ? saved!.Ca : null),
            CertFile = pairGiven ? flags.CertFile : useSaved ? saved!.Cert : null,
            KeyFile = pairGiven ? flags.KeyFile : useSaved ? saved!.Key : null,
            Token = flags.Token ?? (useSaved && saved!.TokenFile is { } tokenFile ? ReadToken(contextName!, tokenFile) : null),
        };
        return new CliTarget(endpoint, source, useSaved ? contextName : null, connection);
    }

    private static string ReadToken(string context, string file)
    {
        try
        {
            var token = File.ReadAllText(file).Trim();
            return token.Length > 0 ? token : throw new CliProblem(ExitCodes.Usage, $"the token file {file} of context '{context}' is empty.");
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            throw new CliProblem(ExitCodes.Usage, $"cannot read the token file {file} of context '{context}': {ex.Message}");
        }
    }
}

/// <summary>What the command line and the environment say before a command picks its target.</summary>
internal sealed class CliSettings
{
    /// <summary>The environment variables, and so the configuration file.</summary>
    public CliEnvironment Environment { get; init; } = CliEnvironment.Process;

    /// <summary>The global <c>--context</c>, if given.</summary>
    public string? ContextName { get; init; }

    /// <summary>The global <c>--ca</c>, <c>--cert</c>, <c>--key</c> and <c>--token</c>, each else its environment variable.</summary>
    public CliConnection Credentials { get; init; } = new();

    /// <summary>The global <c>--ca</c>, <c>--cert</c>, <c>--key</c> and <c>--token</c> as given on the command line, without their environment variables.</summary>
    public CliConnection GivenCredentials { get; init; } = new();
}

/// <summary>A command cannot go on; the message says why, and <see cref="ExitCode"/> is what the command exits with.</summary>
internal sealed class CliProblem(int exitCode, string message) : Exception(message)
{
    /// <summary>The exit code (<see cref="ExitCodes"/>).</summary>
    public int ExitCode { get; } = exitCode;
}
