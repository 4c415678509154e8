using Quintet.Manager.Isolation;

namespace Quintet.Manager.Hosting;

/// <summary>The manager executable's entry point: a manager, or one of its isolated workers, which run the same executable.</summary>
public static class ManagerProgram
{
    /// <summary>
    /// Runs a worker when <paramref name="args"/> is a worker's command line, a manager otherwise; returns the process
    /// exit code. <paramref name="configure"/> adds the host's plug-ins (store kinds) to both, so that a worker can open
    /// a store its manager shares with it.
    /// </summary>
    public static Task<int> RunAsync(string[] args, Action<IQuintetManagerBuilder>? configure = null) =>
        WorkerArguments.IsWorkerCommand(args)
            ? WorkerHost.RunAsync(args, configure)
            : ManagerHost.RunAsync(args, configure);
}
