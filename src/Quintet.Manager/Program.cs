// The same executable runs the isolated workers of packages whose QoS says isolation: process.
using Quintet.Manager.Hosting;
using Quintet.Manager.Isolation;

return WorkerArguments.IsWorkerCommand(args)
    ? await WorkerHost.RunAsync(args)
    : await ManagerHost.RunAsync(args);
