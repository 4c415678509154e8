using Quintet.Cli;
using Quintet.Demo;

return await QuintetCli.RunAsync(args, "quintet-demo", DemoCommand.CreateRoot);
