using Quintet.Build;

// quintet-build manifest --assembly <dll> --name <package> --version <version> --references <file> --output <json>
// Errors are printed in MSBuild's canonical form ("<file> : error QNTnnnn: ..."), so the build shows them as errors.
if (args.Length == 0 || args[0] != "manifest")
{
    Console.Error.WriteLine("usage: Quintet.Build manifest --assembly <dll> --name <package> --version <version> --references <file> --output <json>");
    return 2;
}

var options = new Dictionary<string, string>(StringComparer.Ordinal);
for (var i = 1; i < args.Length; i += 2)
{
    if (i + 1 >= args.Length || !args[i].StartsWith("--", StringComparison.Ordinal))
    {
        Console.Error.WriteLine($"Quintet.Build : error QNT0001: '{args[i]}' is not an option with a value.");
        return 2;
    }

    options[args[i][2..]] = args[i + 1];
}

string Required(string name) => options.TryGetValue(name, out var value) && !string.IsNullOrWhiteSpace(value)
    ? value
    : throw new ManifestException($"--{name} is missing.");

try
{
    var assembly = Required("assembly");
    var references = options.TryGetValue("references", out var list) && File.Exists(list)
        ? File.ReadAllLines(list).Where(line => line.Length > 0).ToList()
        : [];
    var manifest = ManifestWriter.Describe(assembly, references, Required("name"), Required("version"));
    var written = ManifestWriter.WriteIfChanged(manifest, Required("output"));
    Console.WriteLine(written
        ? $"quintet-package.json: {manifest.Components.Count} component class(es) of {Path.GetFileName(assembly)}"
        : "quintet-package.json: up to date");
    return 0;
}
catch (ManifestException e)
{
    Console.Error.WriteLine($"{options.GetValueOrDefault("assembly", "Quintet.Build")} : error QNT0002: {e.Message}");
    return 1;
}
