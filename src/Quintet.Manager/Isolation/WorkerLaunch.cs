
namespace Quintet.Manager.Isolation;

/// <summary>
/// How to start the manager executable again as a worker: the program and the arguments that come before
/// <see cref="WorkerArguments"/>. The worker runs on the same runtime and the same build as the manager that starts it.
/// </summary>
/// <param name="FileName">The program: the <c>dotnet</c> host or the manager's own apphost.</param>
/// <param name="Prefix">What precedes the worker's arguments: <c>exec Quintet.Manager.dll</c> under the <c>dotnet</c> host.</param>
internal sealed record WorkerLaunch(string FileName, IReadOnlyList<string> Prefix)
{
    /// <summary>The launch that runs this process's own manager assembly the way this process runs.</summary>
    public static WorkerLaunch ForThisProcess()
    {
        var assembly = typeof(WorkerLaunch).Assembly.Location;
        var processPath = Environment.ProcessPath;
        if (processPath is not null && Path.GetFileNameWithoutExtension(processPath).Equals("dotnet", StringComparison.OrdinalIgnoreCase))
        {
            return new WorkerLaunch(processPath, ["exec", assembly]);
        }

        if (processPath is not null && Path.GetFileNameWithoutExtension(processPath).Equals(Path.GetFileNameWithoutExtension(assembly), StringComparison.OrdinalIgnoreCase))
        {
            // The manager runs from its apphost (an installed service): the worker does too.
            return new WorkerLaunch(processPath, []);
        }

        // Hosted in some other program (a test host): run the manager assembly on the dotnet host that the SDK names.
        var host = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH");
        return new WorkerLaunch(string.IsNullOrEmpty(host) || !File.Exists(host) ? "dotnet" : host, ["exec", assembly]);
    }
}
