// The composition root: the plug-ins this executable offers. The same executable runs the isolated workers of packages
// whose QoS says isolation: process, which get the same plug-ins to open a store their manager shares with them.
using Quintet.Manager.Hosting;
using Quintet.Persistence;

return await ManagerProgram.RunAsync(args, manager => manager.Services.AddPostgreSqlCheckpointStore());
