using Quintet.Console.Hosting;

var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = args });
builder.AddQuintetConsole(args);

var app = builder.Build();
app.MapQuintetConsole();
await app.RunAsync();

/// <summary>The console's entry point, named so that tests can host it.</summary>
public partial class Program;
