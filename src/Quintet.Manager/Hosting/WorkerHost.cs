using Quintet.Manager.Configuration;
using Quintet.Manager.Isolation;
using Quintet.Manager.Lifetime;
using Quintet.Manager.Packages;
using Quintet.Manager.Persistence;
using Quintet.Persistence;

namespace Quintet.Manager.Hosting;

/// <summary>
/// The isolated worker: the manager executable started with <c>worker</c> first (see <see cref="WorkerArguments"/>).
/// It loads one package, serves its component calls to its manager over HTTP/2 on loopback, and ends when asked, when
/// its manager's process ends, or when a component takes it down, which is the point: then only this package's
/// instances are lost, and the manager starts a new worker.
/// </summary>
internal static class WorkerHost
{
    /// <summary>
    /// Runs a worker until it is stopped; returns its exit code (0 stopped, 2 bad command line, 3 package refused).
    /// <paramref name="configure"/> adds the host's plug-ins, so that the worker can open a store its manager shares.
    /// </summary>
    public static async Task<int> RunAsync(IReadOnlyList<string> args, Action<IQuintetManagerBuilder>? configure = null)
    {
        WorkerArguments arguments;
        try
        {
            arguments = WorkerArguments.Parse(args);
        }
        catch (FormatException e)
        {
            await Console.Error.WriteLineAsync($"quintet-worker: {e.Message}");
            return 2;
        }

        ComponentPackage package;
        try
        {
            package = PackageLoader.Load(arguments.PackageDirectory);
        }
        catch (PackageException e)
        {
            await Console.Error.WriteLineAsync($"quintet-worker: the package in {arguments.PackageDirectory} is refused: {e.Message}");
            return 3;
        }

        await using var app = Build(arguments, package, configure);
        await app.StartAsync();

        // The manager waits for this line (bounded) before it sends the first call.
        WorkerEndpoints.Restrict(arguments.Endpoint);
        Console.Out.WriteLine(WorkerArguments.ReadyPrefix + arguments.Endpoint);
        await Console.Out.FlushAsync();

        // Returns once the server has stopped: no call is running when the instances are deactivated.
        await app.WaitForShutdownAsync();
        using (var budget = new CancellationTokenSource(WorkerControl.DeactivationBudget))
        {
            await app.Services.GetRequiredService<WorkerInstances>().DeactivateAllAsync(budget.Token);
        }

        return 0;
    }

    /// <summary>
    /// Builds the worker's host: Kestrel on the endpoint the manager chose (a Unix domain socket or a named pipe only
    /// the manager's user can open; HTTP/2 only), the package's calls and the stop request.
    /// </summary>
    internal static WebApplication Build(WorkerArguments arguments, ComponentPackage package, Action<IQuintetManagerBuilder>? configure = null)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions
        {
            Args = [],
            ContentRootPath = AppContext.BaseDirectory,
        });
        builder.Logging.ClearProviders();
        builder.Logging.AddSimpleConsole(o =>
        {
            o.SingleLine = true;
            o.TimestampFormat = "HH:mm:ss.fff ";
        });
        builder.Logging.SetMinimumLevel(LogLevel.Information);
        builder.Logging.AddFilter("Microsoft", LogLevel.Warning);

        // A stop must not hang on a call a component never finishes: the manager kills the worker soon after anyway.
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(5));
        builder.Services.AddSingleton(TimeProvider.System);
        builder.Services.Configure<ManagerOptions>(o => o.ParentProcessId = arguments.ParentProcessId);
        builder.Services.AddHostedService<ParentProcessWatcher>();
        // The manager passes its store choice in the environment (IsolatedWorkerSettings.Environment) when its kind is
        // shared with workers; otherwise the worker keeps a local store in its own data folder.
        configure?.Invoke(new QuintetManagerBuilder(builder.Services, builder.Configuration));
        var store = builder.Configuration.GetSection(StoreOptions.SectionName).Get<StoreOptions>() ?? new StoreOptions();
        if (builder.Services.GetCheckpointStoreKinds().TryGet(store.Kind, out var kind) && kind.SharedWithWorkers)
        {
            kind.AddServices?.Invoke(builder.Services);
            builder.Services.AddSingleton(kind.Create);
        }
        else
        {
            builder.Services.AddSingleton(sp => new LocalCheckpointStore(arguments.DataDirectory, sp.GetRequiredService<ILogger<LocalCheckpointStore>>()));
            builder.Services.AddSingleton<ICheckpointStore>(sp => sp.GetRequiredService<LocalCheckpointStore>());
        }

        builder.Services.AddSingleton(sp => new WorkerInstances(package, sp.GetRequiredService<ICheckpointStore>(), arguments.ManagerName, sp.GetRequiredService<ILogger<WorkerInstances>>()));
        builder.Services.AddSingleton<IComponentInvoker>(sp => sp.GetRequiredService<WorkerInstances>());
        builder.WebHost.ConfigureKestrel(kestrel => WorkerEndpoints.Listen(kestrel, arguments.Endpoint));

        var app = builder.Build();
        app.MapPost($"/{WorkerControl.ControlService}/{{operation}}", (HttpContext context, string operation, WorkerInstances instances, IHostApplicationLifetime lifetime) =>
            WorkerCallEndpoint.HandleAsync(context, WorkerControl.ControlService, operation, new WorkerControl(instances, lifetime)));
        app.MapWorkerCalls();
        return app;
    }
}
