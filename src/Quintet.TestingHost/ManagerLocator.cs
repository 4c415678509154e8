namespace Quintet.TestingHost;

/// <summary>Finds the manager binary to start.</summary>
internal static class ManagerLocator
{
    public const string EnvironmentVariable = "QUINTET_MANAGER_PATH";
    private const string FileName = "Quintet.Manager.dll";

    public static string Locate(string? configured)
    {
        var candidates = new[]
        {
            configured,
            Environment.GetEnvironmentVariable(EnvironmentVariable),
            Path.Combine(AppContext.BaseDirectory, FileName),
            // Where the Quintet.TestingHost NuGet package puts the manager it carries.
            Path.Combine(AppContext.BaseDirectory, "quintet-manager", FileName),
            Path.Combine(Path.GetDirectoryName(typeof(ManagerLocator).Assembly.Location) ?? string.Empty, FileName),
        };
        foreach (var candidate in candidates)
        {
            if (!string.IsNullOrWhiteSpace(candidate) && File.Exists(candidate))
            {
                return Path.GetFullPath(candidate);
            }
        }

        throw new FileNotFoundException(
            $"Cannot find {FileName}. Reference the Quintet.TestingHost package (it copies the manager to quintet-manager/ beside your tests) or the Quintet.Manager project, " +
            $"set {nameof(LocalClusterOptions)}.{nameof(LocalClusterOptions.ManagerPath)}, or set {EnvironmentVariable}.");
    }

    /// <summary>The <c>dotnet</c> host that runs the manager: the one running us, when it is dotnet.</summary>
    public static string DotnetHost()
    {
        var fromSdk = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH");
        if (!string.IsNullOrEmpty(fromSdk) && File.Exists(fromSdk))
        {
            return fromSdk;
        }

        var current = Environment.ProcessPath;
        if (current is not null && Path.GetFileNameWithoutExtension(current).Equals("dotnet", StringComparison.OrdinalIgnoreCase))
        {
            return current;
        }

        var root = Environment.GetEnvironmentVariable("DOTNET_ROOT");
        if (!string.IsNullOrEmpty(root))
        {
            var inRoot = Path.Combine(root, OperatingSystem.IsWindows() ? "dotnet.exe" : "dotnet");
            if (File.Exists(inRoot))
            {
                return inRoot;
            }
        }

        return "dotnet";
    }
}
