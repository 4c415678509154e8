namespace Quintet.Cli.Configuration;

/// <summary>
/// The environment variables the CLI reads, and where its configuration file is. Passed in rather than read from the
/// process, so that a run can be given its own environment (a test, a tool that embeds the CLI).
/// </summary>
internal sealed class CliEnvironment(Func<string, string?> variable)
{
    /// <summary>The endpoint of a manager, when no <c>--endpoint</c> is given.</summary>
    public const string Endpoint = "QUINTET_ENDPOINT";

    /// <summary>The saved context to use, when no <c>--context</c> is given.</summary>
    public const string Context = "QUINTET_CONTEXT";

    /// <summary>The configuration file of saved contexts, in place of the per-user default.</summary>
    public const string Config = "QUINTET_CONFIG";

    /// <summary>The PEM file of the cluster's CAs (<c>--ca</c>).</summary>
    public const string Ca = "QUINTET_CA";

    /// <summary>The client certificate (<c>--cert</c>).</summary>
    public const string Cert = "QUINTET_CERT";

    /// <summary>The client certificate's key (<c>--key</c>).</summary>
    public const string Key = "QUINTET_KEY";

    /// <summary>A bearer token (<c>--token</c>).</summary>
    public const string Token = "QUINTET_TOKEN";

    /// <summary>The process's own environment.</summary>
    public static CliEnvironment Process { get; } = new(System.Environment.GetEnvironmentVariable);

    /// <summary>The value of <paramref name="name"/>; null when it is unset or empty.</summary>
    public string? Get(string name) => variable(name) is { Length: > 0 } value ? value : null;

    /// <summary>
    /// The configuration file: <c>$QUINTET_CONFIG</c>; else <c>%APPDATA%\quintet\config.json</c> on Windows;
    /// else <c>$XDG_CONFIG_HOME/quintet/config.json</c>, with <c>~/.config</c> when XDG_CONFIG_HOME is unset or not an
    /// absolute path (as the XDG base directory specification says).
    /// </summary>
    public string ConfigFile()
    {
        if (Get(Config) is { } explicitPath)
        {
            return Path.GetFullPath(explicitPath);
        }

        if (OperatingSystem.IsWindows())
        {
            var appData = Get("APPDATA") ?? System.Environment.GetFolderPath(System.Environment.SpecialFolder.ApplicationData);
            return Path.Combine(appData, "quintet", "config.json");
        }

        var configHome = Get("XDG_CONFIG_HOME") is { } xdg && Path.IsPathRooted(xdg)
            ? xdg
            : Path.Combine(Get("HOME") ?? System.Environment.GetFolderPath(System.Environment.SpecialFolder.UserProfile), ".config");
        return Path.Combine(configHome, "quintet", "config.json");
    }
}
