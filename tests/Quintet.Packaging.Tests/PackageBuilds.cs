namespace Quintet.Packaging.Tests;

/// <summary>
/// The packages' tests run one after the other, so that this project takes one core at most beside the other test
/// projects. Each package is built once, by its class fixture, from this run's build output (--from-build): the
/// scripts read the projects' bin folders and write only under a temp folder, so nothing is compiled again and no bin or
/// obj folder that another test project uses is written.
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
            [path, "--configuration", Repository.Configuration, "--from-build", .. options, outputDirectory],
            TimeSpan.FromMinutes(5));
        var package = output.Split('\n', StringSplitOptions.RemoveEmptyEntries).Last().Trim();
        Assert.True(File.Exists(package), $"{script} printed '{package}', which is not a file.");
        return package;
    }
}
