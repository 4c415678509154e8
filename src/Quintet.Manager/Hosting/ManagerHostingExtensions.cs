using System.Net;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;
using Quintet.Core.Cluster;
using Quintet.Diagnostics;
using Quintet.Manager.ActiveReplication;
using Quintet.Manager.Admin;
using Quintet.Manager.Components;
using Quintet.Manager.Configuration;
using Quintet.Manager.Diagnostics;
using Quintet.Manager.Extensions;
using Quintet.Manager.Health;
using Quintet.Manager.Internal;
using Quintet.Manager.Invocation;
using Quintet.Manager.Isolation;
using Quintet.Manager.Lifecycle;
using Quintet.Manager.Lifetime;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Quintet.Manager.Persistence;
using Quintet.Manager.Readiness;
using Quintet.Manager.Security;
using Quintet.Persistence;
using Quintet.Protocol.Admin;
using Quintet.Security;

namespace Quintet.Manager.Hosting;

/// <summary>The one front door for hosting a component manager in a web application.</summary>
public static class ManagerHostingExtensions
{
    /// <summary>
    /// Configures the builder as a Quintet component manager: validated settings, cluster membership, the gRPC
    /// endpoint with health and admin services, service integration (systemd, Windows) and telemetry.
    /// </summary>
    /// <param name="builder">The web application to make a manager.</param>
    /// <param name="configure">
    /// Adds the host's plug-ins before the settings are checked: store kinds beside the built-in <c>replicated</c> and
    /// <c>local</c> (for example <c>manager => manager.Services.AddPostgreSqlCheckpointStore()</c>), which
    /// <c>Quintet:Store:Kind</c> may then name.
    /// </param>
    /// <exception cref="ConfigurationErrorException">A setting is unknown, unreadable or invalid, <c>Quintet:Store:Kind</c> names no kind registered (the message lists those), or an extension of <c>Quintet:Extensions</c> cannot be loaded.</exception>
    /// <exception cref="PortInUseException">A configured port is already taken.</exception>
    public static WebApplicationBuilder UseQuintetManager(this WebApplicationBuilder builder, Action<IQuintetManagerBuilder>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var kinds = builder.Services.GetCheckpointStoreKinds();
        CheckpointStoreServiceCollectionExtensions.AddBuiltInKinds(kinds);
        configure?.Invoke(new QuintetManagerBuilder(builder.Services, builder.Configuration));
        var settings = StartupSettings.Load(builder.Configuration, kinds);
        var extensions = ExtensionLoader.Load(settings.Extensions, builder.Environment.ContentRootPath);
        PortCheck.EnsureFree(settings.GrpcHost, settings.Manager.GrpcPort, $"{ManagerOptions.SectionName}:GrpcPort");
        PortCheck.EnsureFree(settings.Cluster.Host, settings.Cluster.Port, $"{ClusterOptions.SectionName}:Port");

        builder.Services.AddSystemd();
        if (Microsoft.Extensions.Hosting.Systemd.SystemdHelpers.IsSystemdService())
        {
            builder.Services.AddSingleton<Microsoft.Extensions.Hosting.Systemd.ISystemdNotifier>(sp =>
                new RestartAwareSystemdNotifier(new Microsoft.Extensions.Hosting.Systemd.SystemdNotifier(), sp.GetRequiredService<ManagerRestarts>()));
        }

        // The name the installer registers the service under (installer/windows/Quintet.wxs).
        builder.Services.AddWindowsService(o => o.ServiceName = "QuintetManager");
        if (Microsoft.Extensions.Hosting.WindowsServices.WindowsServiceHelpers.IsWindowsService())
        {
            builder.Services.AddHostedService<WindowsServiceExitCode>();
        }
        builder.Logging.AddSimpleConsole(o =>
        {
            o.SingleLine = true;
            o.TimestampFormat = "HH:mm:ss.fff ";
        });

        builder.Services.AddSingleton(TimeProvider.System);

        // The manager's recent warnings and errors, for the admin API (quintet cluster log).
        builder.Services.AddSingleton<RecentLogEntries>();
        builder.Services.AddSingleton<ILoggerProvider>(sp => sp.GetRequiredService<RecentLogEntries>());
        builder.Services.AddSingleton(settings.Security);
        builder.Services.AddHostedService<SecurityNotice>();
        builder.Services.AddOptions<AuditOptions>().Bind(builder.Configuration.GetSection(AuditOptions.SectionName));
        builder.Services.AddSingleton<AuditLog>();
        builder.Services.AddQuintetCluster(builder.Configuration)
            .AddQuintetWireMessages(AdminReflection.Descriptor)
            .AddQuintetWireMessages(ManagerInternalReflection.Descriptor);
        builder.Services.AddOptions<ManagerOptions>()
            .Bind(builder.Configuration.GetSection(ManagerOptions.SectionName))
            .ValidateOnStart();
        builder.Services.AddSingleton<Microsoft.Extensions.Options.IValidateOptions<ManagerOptions>, ManagerOptionsValidator>();

        var advertisedHost = IPAddress.TryParse(settings.GrpcHost, out var ip) && (ip.Equals(IPAddress.Any) || ip.Equals(IPAddress.IPv6Any))
            ? settings.Cluster.Host
            : settings.GrpcHost;
        builder.Services.AddSingleton<ManagerProblems>();
        // ManagerHost adds the one that outlives its runs; any other host cannot restart the manager in process.
        builder.Services.TryAddSingleton(new ManagerRestarts(inProcess: false));
        builder.Services.AddSingleton(sp => new ManagerIdentity(settings.NodeName, advertisedHost, sp.GetRequiredService<IServer>(), sp.GetRequiredService<IHostApplicationLifetime>(), sp.GetRequiredService<TimeProvider>(), sp.GetRequiredService<ManagerProblems>())
        {
            Restarts = sp.GetRequiredService<ManagerRestarts>().Count,
        });
        builder.Services.AddSingleton<ManagerExitStatus>();
        builder.Services.AddSingleton<ManagerRestart>();
        builder.Services.AddSingleton<ManagerReports>();
        builder.Services.AddSingleton<IManagerReportPart, ReadinessReportPart>();
        builder.Services.AddSingleton<IManagerReportPart, PackagesReportPart>();
        builder.Services.AddSingleton<ManagersView>();
        builder.Services.AddSingleton<InstanceListing>();
        builder.Services.AddSingleton<ManagerTargets>();
        builder.Services.AddSingleton<ClusterTree>();
        builder.Services.AddSingleton<StatisticsWatch>();
        builder.Services.AddSingleton<InvocationFeed>();
        builder.Services.AddSingleton<InvocationWatch>();
        builder.Services.AddSingleton<CheckpointStores>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<ManagerReports>());
        builder.Services.AddHostedService<RemovedFromClusterWatcher>();
        builder.Services.AddHostedService<ParentProcessWatcher>();
        builder.Services.AddHostedService<EndpointFileWriter>();
        builder.Services.AddOptions<DiagnosticsOptions>().Bind(builder.Configuration.GetSection(DiagnosticsOptions.SectionName));
        builder.Services.AddSingleton<ManagersGroupMonitor>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<ManagersGroupMonitor>());
        builder.Services.AddSingleton<GroupWorkload>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<GroupWorkload>());
        builder.Services.AddSingleton<LightGroupWorkload>();
        builder.Services.AddSingleton<RawRemotingWorkload>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<RawRemotingWorkload>());

        builder.Services.AddGrpc(o =>
            {
                o.EnableDetailedErrors = false;

                // Every answer a status that says what failed, never a bare UNKNOWN.
                o.Interceptors.Add<UnexpectedErrorInterceptor>();

                // Unknown paths go on to the component call endpoint, which serves deployed contracts.
                o.IgnoreUnknownServices = true;
            })
            .AddServiceOptions<ComponentAdminService>(o =>
            {
                o.MaxReceiveMessageSize = ComponentAdminService.MaxPackageBytes + (64 * 1024);
                o.Interceptors.Add<AuditInterceptor>();
                o.Interceptors.Add<ReadinessInterceptor>();
            })
            .AddServiceOptions<ClusterAdminService>(o => o.Interceptors.Add<AuditInterceptor>())
            .AddServiceOptions<GroupDiagnosticsService>(o => o.Interceptors.Add<AuditInterceptor>())
            .AddServiceOptions<AuditService>(o => o.Interceptors.Add<AuditInterceptor>())
            .AddServiceOptions<SharedStructureAdminService>(o =>
            {
                o.Interceptors.Add<AuditInterceptor>();
                o.Interceptors.Add<ReadinessInterceptor>();
            })
            .AddServiceOptions<CoordinationAdminService>(o =>
            {
                o.Interceptors.Add<AuditInterceptor>();
                o.Interceptors.Add<ReadinessInterceptor>();
            })
            .AddServiceOptions<ComponentRolesService>(o =>
            {
                o.Interceptors.Add<AuditInterceptor>();
                o.Interceptors.Add<ReadinessInterceptor>();
            })
            .AddServiceOptions<ComponentInstancesService>(o => o.Interceptors.Add<ReadinessInterceptor>())
            .AddServiceOptions<InstanceTransferService>(o => o.MaxReceiveMessageSize = PeerChannels.MaxMessageBytes)
            .AddServiceOptions<Persistence.Replication.StoreReplicationService>(o => o.MaxReceiveMessageSize = Persistence.Replication.StoreWire.MaxMessageBytes);

        // The manager's services bound by a provider whose request parsing answers INVALID_ARGUMENT, not UNKNOWN.
        foreach (var binder in builder.Services.Where(d => d.ServiceType == typeof(Grpc.AspNetCore.Server.Model.IServiceMethodProvider<>) && d.ImplementationType?.Name == "BinderServiceMethodProvider`1").ToList())
        {
            builder.Services.Remove(binder);
        }

        builder.Services.AddSingleton(typeof(Grpc.AspNetCore.Server.Model.IServiceMethodProvider<>), typeof(RequestDecodingMethodProvider<>));
        builder.Services.AddSingleton(sp =>
        {
            var node = sp.GetRequiredService<ManagerIdentity>().NodeName;
            var store = sp.GetRequiredService<Microsoft.Extensions.Options.IOptions<Quintet.Manager.Persistence.StoreOptions>>().Value;
            return new Quintet.Runtime.Structures.SharedStructures(sp.GetRequiredService<Quintet.Core.Groups.GroupService>())
            {
                Logger = sp.GetRequiredService<ILoggerFactory>().CreateLogger<Quintet.Runtime.Structures.SharedStructures>(),
                Limits = settings.SharedStructures.ToLimits(),
                Durability = new Quintet.Runtime.Replication.DurabilityOptions
                {
                    Directory = Path.Combine(sp.GetRequiredService<Microsoft.Extensions.Options.IOptions<ManagerOptions>>().Value.DataDirectoryFor(node), "shared"),
                    ReplicaName = node,

                    // The same rule as the replicated store's majority: the configured size, or the managers seen if more.
                    PlannedReplicas = () => Math.Max(store.Managers, sp.GetService<Quintet.Manager.Persistence.Replication.ManagerReplicaSet>()?.Known.Count ?? 0),
                    WriteFailed = sp.GetRequiredService<ManagerProblems>().DurableLogFailed,
                    WriteRepaired = sp.GetRequiredService<ManagerProblems>().DurableLogRepaired,
                    SnapshotEveryCommands = settings.SharedStructures.DurableSnapshotEveryCommands,
                },
            };
        });
        builder.Services.AddHostedService<DurableStructuresStarter>();
        builder.Services.AddSingleton<RoleAssignments>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<RoleAssignments>());
        builder.Services.AddSingleton<Quintet.Runtime.Coordination.CoordinationService>();
        builder.Services.AddSingleton<InstanceDirectory>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<InstanceDirectory>());
        builder.Services.AddSingleton(settings.Store);
        // Load checked that the kind is registered.
        kinds.TryGet(settings.Store.Kind, out var storeKind);
        builder.Services.AddCheckpointStore(builder.Configuration, settings.Store, storeKind!);
        builder.Services.AddSingleton<PeerChannels>();
        builder.Services.AddSingleton<PeerCalls>();
        builder.Services.AddInvocationPipeline();
        builder.Services.AddSingleton<DeployedPackages>();
        builder.Services.AddSingleton<InstanceShadows>();
        builder.Services.AddOptions<CompletionRecordsOptions>().Bind(builder.Configuration.GetSection(CompletionRecordsOptions.SectionName));
        builder.Services.AddOptions<EventLogOptions>().Bind(builder.Configuration.GetSection(EventLogOptions.SectionName));
        builder.Services.AddSingleton<InstanceEvents>();
        builder.Services.AddSingleton<CompletionRecordBook>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<CompletionRecordBook>());
        builder.Services.AddSingleton<CallCompletions>();
        builder.Services.AddSingleton<PrimaryBackups>();
        builder.Services.AddSingleton<InstanceMigration>();
        builder.Services.AddSingleton<ManagerDrain>();
        builder.Services.AddSingleton<InstanceActivation>();
        builder.Services.AddSingleton<InstanceDeactivation>();
        builder.Services.AddSingleton<FreshInstances>();
        builder.Services.AddSingleton<InstanceRetirement>();
        builder.Services.AddSingleton<ActiveReplication.ActiveReplicas>();
        builder.Services.AddSingleton<ComponentHost>();
        builder.Services.AddSingleton<IPackageDeployer>(sp => sp.GetRequiredService<ComponentHost>());
        builder.Services.AddIsolatedWorkers();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<InstanceRetirement>());
        builder.Services.AddSingleton<PackageStore>();
        builder.Services.AddSingleton<PackageReplicator>();
        builder.Services.AddHostedService(sp => sp.GetRequiredService<PackageReplicator>());
        builder.Services.AddSingleton<ManagerReadiness>();
        builder.Services.AddManagerHealth().AddHealthChecks().AddCheck<ReadinessHealthCheck>("readiness");
        if (settings.Security.Enabled)
        {
            builder.Services.AddGrpcSecurity(settings.Security);
        }

        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            void Http2(ListenOptions listen)
            {
                listen.Protocols = HttpProtocols.Http2;
                if (settings.Security.Enabled)
                {
                    listen.UseTls(settings.Security);
                }
            }

            if (IPAddress.TryParse(settings.GrpcHost, out var address))
            {
                kestrel.Listen(address, settings.Manager.GrpcPort, Http2);
            }
            else
            {
                kestrel.ListenLocalhost(settings.Manager.GrpcPort, Http2);
            }
        });

        // Last, so that the extensions start after every service of the manager's own, and before its endpoint listens.
        builder.Services.AddSingleton(sp => new ManagerExtensions(
            extensions,
            settings.NodeName,
            sp.GetRequiredService<IConfiguration>(),
            sp.GetRequiredService<ILoggerFactory>(),
            sp.GetRequiredService<ManagerProblems>(),
            sp.GetRequiredService<CallObservers>(),
            sp.GetRequiredService<InstanceObservers>(),
            sp.GetRequiredService<ILogger<ManagerExtensions>>()));
        builder.Services.AddSingleton<IManagerReportPart>(sp => sp.GetRequiredService<ManagerExtensions>());
        builder.Services.AddHostedService(sp => sp.GetRequiredService<ManagerExtensions>());

        AddTelemetry(builder, settings.NodeName);
        return builder;
    }

    /// <summary>
    /// Maps the manager's gRPC services: <c>grpc.health.v1</c>, the admin API, the managers' internal services and
    /// component calls. With security on, each gets the access docs/security.md lists (health stays open to anyone who
    /// completes TLS); with security off, all are open, as on loopback they always were.
    /// </summary>
    public static WebApplication MapQuintetManager(this WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        if (!app.Services.GetRequiredService<ClusterSecurity>().Enabled)
        {
            app.MapGrpcService<ManagerHealthService>();
            app.MapGrpcService<ClusterAdminService>();
            app.MapGrpcService<GroupDiagnosticsService>();
            app.MapGrpcService<ComponentAdminService>();
            app.MapGrpcService<AuditService>();
            app.MapGrpcService<ComponentRolesService>();
            app.MapGrpcService<PackageDistributionService>();
            app.MapGrpcService<InstanceTransferService>();
            app.MapGrpcService<ReplicaHostingService>();
            app.MapGrpcService<Persistence.Replication.StoreReplicationService>();
            app.MapGrpcService<ComponentInstancesService>();
            app.MapGrpcService<SharedStructureAdminService>();
            app.MapGrpcService<CoordinationAdminService>();
            app.MapGrpcService<ClusterViewService>();
            app.MapComponentCalls();
            return app;
        }

        app.UseAuthentication();
        app.UseAuthorization();
        app.MapGrpcService<ManagerHealthService>().AllowAnonymous();
        app.MapGrpcService<ClusterAdminService>().RequireAccessByMethod();
        app.MapGrpcService<GroupDiagnosticsService>().RequireAccessByMethod();
        app.MapGrpcService<ComponentAdminService>().RequireAccessByMethod();
        app.MapGrpcService<AuditService>().RequireAccessByMethod();
        app.MapGrpcService<ComponentRolesService>().RequireAccessByMethod();
        app.MapGrpcService<ComponentInstancesService>().RequireAccessByMethod();
        app.MapGrpcService<SharedStructureAdminService>().RequireAccessByMethod();
        app.MapGrpcService<CoordinationAdminService>().RequireAccessByMethod();
        app.MapGrpcService<ClusterViewService>().RequireAccessByMethod();
        app.MapGrpcService<PackageDistributionService>().RequireAccess(Access.Manager);
        app.MapGrpcService<InstanceTransferService>().RequireAccess(Access.Manager);
        app.MapGrpcService<ReplicaHostingService>().RequireAccess(Access.Manager);
        app.MapGrpcService<Persistence.Replication.StoreReplicationService>().RequireAccess(Access.Manager);
        app.MapComponentCalls(secured: true);
        return app;
    }

    private static void AddTelemetry(WebApplicationBuilder builder, string nodeName)
    {
        // Only where an operator asked for export (the standard OTEL_EXPORTER_OTLP_ENDPOINT variable or setting): without
        // it, nothing listens to the Quintet sources and meters, so a call makes no span and records no measurement
        // (dotnet-counters and dotnet-trace still read the meters and sources on demand). docs/observability.md.
        if (string.IsNullOrWhiteSpace(builder.Configuration["OTEL_EXPORTER_OTLP_ENDPOINT"]))
        {
            return;
        }

        builder.Services.AddOpenTelemetry()
            .ConfigureResource(r => r.AddService("quintet-manager", serviceInstanceId: nodeName))
            .WithTracing(t => t
                .AddSource(QuintetTelemetry.Wildcard)
                .AddAspNetCoreInstrumentation(o => o.EnrichWithHttpResponse = NameComponentCallSpan)

                // The calls between managers (instance transfer, backups, store replication, package distribution,
                // admin requests passed on). A forwarded component call is a client span of PeerForwarding's own, named
                // after the component's method, which suppresses this instrumentation for its call.
                .AddGrpcClientInstrumentation())
            .WithMetrics(m => m.AddMeter(QuintetTelemetry.Wildcard).AddAspNetCoreInstrumentation().AddRuntimeInstrumentation())
            .UseOtlpExporter();
        builder.Logging.AddOpenTelemetry(o => o.IncludeScopes = true);
    }

    /// <summary>
    /// Names a component call's server span after its method (<c>samples.counter.Counter/Add</c>), as the RPC conventions
    /// want, once ASP.NET Core's instrumentation has named it after the route template as it stops.
    /// </summary>
    private static void NameComponentCallSpan(System.Diagnostics.Activity activity, HttpResponse response)
    {
        if (activity.GetTagItem("rpc.service") is string service && activity.GetTagItem("rpc.method") is string method)
        {
            activity.DisplayName = service + "/" + method;
        }
    }
}
