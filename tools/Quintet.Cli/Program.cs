using Quintet.Cli;

return await QuintetCli.RunAsync(args);
