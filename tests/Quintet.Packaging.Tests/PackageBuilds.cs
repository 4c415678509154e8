namespace Quintet.Packaging.Tests;

/// <summary>
/// The packages' tests run one after the other: each builds with the installers' scripts from the projects' own bin
/// and obj folders, which two concurrent publishes would both write.
/// </summary>
[CollectionDefinition(Name)]
public sealed class PackageBuilds
{
    public const string Name = "Package builds";

    /// <summary>Runs an installer's build script to its end; returns the package it wrote (its last line of output).</summary>
    public static async Task<string> BuildAsync(string script, string outputDirectory, params string[] options)
    {
        var path = Path.Combine(Repository.Root, script);
        var output = await Command.CheckedAsync(
            "bash",
            [path, "--configuration", Repository.Configuration, "--in-tree", .. options, outputDirectory],
            TimeSpan.FromMinutes(15));
        var package = output.Split('\n', StringSplitOptions.RemoveEmptyEntries).Last().Trim();
        Assert.True(File.Exists(package), $"{script} printed '{package}', which is not a file.");
        return package;
    }
}
