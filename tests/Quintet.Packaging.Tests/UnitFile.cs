namespace Quintet.Packaging.Tests;

/// <summary>The [Service] settings of a systemd unit file, as the tests need them to start a manager the way it would.</summary>
internal sealed class UnitFile
{
    private readonly List<KeyValuePair<string, string>> _service = [];

    private UnitFile()
    {
    }

    public static UnitFile Read(string path)
    {
        var unit = new UnitFile();
        var section = string.Empty;
        foreach (var raw in File.ReadAllLines(path))
        {
            var line = raw.Trim();
            if (line.Length == 0 || line[0] is '#' or ';')
            {
                continue;
            }

            if (line.StartsWith('['))
            {
                section = line;
                continue;
            }

            var equals = line.IndexOf('=', StringComparison.Ordinal);
            if (section == "[Service]" && equals > 0)
            {
                unit._service.Add(new(line[..equals].Trim(), line[(equals + 1)..].Trim()));
            }
        }

        return unit;
    }

    /// <summary>The last value of <paramref name="key"/>, as systemd takes it.</summary>
    public string? Get(string key) => _service.LastOrDefault(s => s.Key == key).Value;

    public string Required(string key) => Get(key) ?? throw new InvalidOperationException($"The unit has no {key}=.");

    public IEnumerable<string> All(string key) => _service.Where(s => s.Key == key).Select(s => s.Value);

    /// <summary>Environment= assignments, in order.</summary>
    public IEnumerable<KeyValuePair<string, string>> Environment() =>
        All("Environment").SelectMany(v => v.Split(' ', StringSplitOptions.RemoveEmptyEntries)).Select(Assignment);

    /// <summary>NAME=value lines of an environment file, comments and blank lines left out.</summary>
    public static IEnumerable<KeyValuePair<string, string>> ReadEnvironmentFile(string path) =>
        File.ReadAllLines(path)
            .Select(l => l.Trim())
            .Where(l => l.Length > 0 && l[0] is not ('#' or ';') && l.Contains('=', StringComparison.Ordinal))
            .Select(Assignment);

    private static KeyValuePair<string, string> Assignment(string text)
    {
        var equals = text.IndexOf('=', StringComparison.Ordinal);
        return new(text[..equals], text[(equals + 1)..].Trim('"'));
    }
}
