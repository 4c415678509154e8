using Quintet.Manager.Hosting;

return await ManagerHost.RunAsync(args);
