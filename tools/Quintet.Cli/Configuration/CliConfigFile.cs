using System.Text;
using System.Text.Json;

namespace Quintet.Cli.Configuration;

/// <summary>
/// Reads and writes the configuration file. It names credential files and may sit beside tokens, so it is written
/// owner-only (0600 in a 0700 folder on Unix) and atomically (a new file renamed over the old): a crash or a second
/// command at the same moment leaves the old file or the new one, never half of one.
/// </summary>
internal static class CliConfigFile
{
    private static readonly JsonSerializerOptions Options = new(JsonSerializerDefaults.Web)
    {
        WriteIndented = true,
        ReadCommentHandling = JsonCommentHandling.Skip,
        AllowTrailingCommas = true,
        UnmappedMemberHandling = System.Text.Json.Serialization.JsonUnmappedMemberHandling.Disallow,
    };

    /// <summary>The configuration in <paramref name="path"/>; an empty one when the file does not exist.</summary>
    /// <exception cref="CliConfigException">The file cannot be read or is not a valid configuration; the message names the file and the line.</exception>
    public static CliConfig Load(string path)
    {
        string text;
        try
        {
            if (!File.Exists(path))
            {
                return new CliConfig();
            }

            text = File.ReadAllText(path, Encoding.UTF8);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            throw new CliConfigException($"cannot read the configuration file {path}: {ex.Message}");
        }

        CliConfig? config;
        try
        {
            config = JsonSerializer.Deserialize<CliConfig>(text, Options);
        }
        catch (JsonException ex)
        {
            var where = ex.LineNumber is { } line ? $"{path}:{line + 1}" : path;
            var column = ex.BytePositionInLine is { } position ? $" (column {position + 1})" : "";
            throw new CliConfigException($"the configuration file {where}{column} is not valid: {Reason(ex)} Mend it, or delete it and save the contexts again ('quintet context set').");
        }

        config ??= new CliConfig();
        config.Contexts ??= new(StringComparer.Ordinal);
        foreach (var (name, context) in config.Contexts)
        {
            if (context is null || !IsEndpoint(context.Endpoint))
            {
                throw new CliConfigException($"the configuration file {path}:{LineOf(text, name)}: context '{name}' has no endpoint, or one that is not an http:// or https:// address.");
            }
        }

        if (config.CurrentContext is { } current && !config.Contexts.ContainsKey(current))
        {
            throw new CliConfigException($"the configuration file {path}:{LineOf(text, current)}: currentContext is '{current}', which is not among its contexts ({Names(config)}). Run 'quintet context use <name>'.");
        }

        return config;
    }

    /// <summary>Writes <paramref name="config"/> to <paramref name="path"/>, owner-only and atomically.</summary>
    /// <exception cref="CliConfigException">The file cannot be written.</exception>
    public static void Save(string path, CliConfig config)
    {
        var directory = Path.GetDirectoryName(path)!;
        var temporary = Path.Combine(directory, $".{Path.GetFileName(path)}.{Guid.NewGuid():N}.tmp");
        try
        {
            if (OperatingSystem.IsWindows())
            {
                // %APPDATA% is the user's own folder, readable by nobody else.
                Directory.CreateDirectory(directory);
            }
            else
            {
                Directory.CreateDirectory(directory, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
            }

            var options = new FileStreamOptions { Mode = FileMode.CreateNew, Access = FileAccess.Write, Share = FileShare.None };
            if (!OperatingSystem.IsWindows())
            {
                options.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
            }

            using (var stream = new FileStream(temporary, options))
            {
                JsonSerializer.Serialize(stream, config, Options);
                stream.WriteByte((byte)'\n');
                stream.Flush(flushToDisk: true);
            }

            File.Move(temporary, path, overwrite: true);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            File.Delete(temporary);
            throw new CliConfigException($"cannot write the configuration file {path}: {ex.Message}");
        }
    }

    /// <summary>A warning when others than the owner may read the file (Unix), else null.</summary>
    public static string? PermissionWarning(string path)
    {
        if (OperatingSystem.IsWindows() || !File.Exists(path))
        {
            return null;
        }

        const UnixFileMode others = UnixFileMode.GroupRead | UnixFileMode.GroupWrite | UnixFileMode.OtherRead | UnixFileMode.OtherWrite;
        return (File.GetUnixFileMode(path) & others) != 0
            ? $"warning: the configuration file {path} may be read by others, and it names your credentials: chmod 600 {path}"
            : null;
    }

    /// <summary>Whether <paramref name="endpoint"/> is an http:// or https:// address.</summary>
    public static bool IsEndpoint(string? endpoint) =>
        Uri.TryCreate(endpoint, UriKind.Absolute, out var uri) && (uri.Scheme == Uri.UriSchemeHttp || uri.Scheme == Uri.UriSchemeHttps);

    private static string Names(CliConfig config) => config.Contexts.Count == 0 ? "none" : string.Join(", ", config.Contexts.Keys);

    /// <summary>The line where <paramref name="name"/> first appears as a JSON string; 1 when it does not.</summary>
    private static int LineOf(string text, string name)
    {
        var at = text.IndexOf(JsonSerializer.Serialize(name), StringComparison.Ordinal);
        return at < 0 ? 1 : text.AsSpan(0, at).Count('\n') + 1;
    }

    /// <summary>What is wrong, without System.Text.Json's own position and path, which the message gives in the user's terms.</summary>
    private static string Reason(JsonException exception)
    {
        var message = (exception.InnerException as JsonException)?.Message ?? exception.Message;
        if (message.Contains("could not be mapped", StringComparison.Ordinal) && message.Split('\'') is [_, var field, ..])
        {
            return $"it has no field '{field}' (at {exception.Path}): the file holds currentContext and contexts, and a context holds endpoint, ca, cert, key and tokenFile.";
        }

        if (message.Contains("could not be converted", StringComparison.Ordinal))
        {
            return $"the value at {exception.Path} is not of the kind expected (a string for endpoint, ca, cert, key, tokenFile and currentContext; an object for contexts).";
        }

        foreach (var marker in new[] { " Path: ", " LineNumber: ", " | LineNumber" })
        {
            var at = message.IndexOf(marker, StringComparison.Ordinal);
            if (at >= 0)
            {
                message = message[..at];
            }
        }

        message = message.Trim();
        return message.EndsWith('.') ? message : message + ".";
    }
}

/// <summary>The configuration file cannot be read or written, or is not valid; the message names the file.</summary>
internal sealed class CliConfigException(string message) : Exception(message);
