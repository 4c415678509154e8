namespace Quintet.Templates.Tests;

/// <summary>Where the sources are, and the configuration the tests were built in (the packs reuse that build).</summary>
internal static class Repository
{
    public static string Root { get; } = FindRoot();

    public static string Configuration { get; } =
        AppContext.BaseDirectory.Contains($"{Path.DirectorySeparatorChar}Release{Path.DirectorySeparatorChar}", StringComparison.Ordinal) ? "Release" : "Debug";

    private static string FindRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Quintet.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Quintet.sln above {AppContext.BaseDirectory}: these tests run from the repository's build.");
    }
}
