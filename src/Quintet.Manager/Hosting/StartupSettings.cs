using System.Collections;
using System.Net;
using System.Reflection;
using Microsoft.Extensions.Options;
using Quintet.Core.Cluster;
using Quintet.Manager.Configuration;
using Quintet.Manager.Extensions;
using Quintet.Manager.Persistence;
using Quintet.Persistence;
using Quintet.Security;

namespace Quintet.Manager.Hosting;

/// <summary>
/// The settings the manager needs before anything starts, read and checked in one pass so that every mistake
/// in the configuration is reported at once, each with the setting's full name.
/// </summary>
internal sealed record StartupSettings(ClusterOptions Cluster, ManagerOptions Manager, StoreOptions Store, SharedStructuresOptions SharedStructures, ClusterSecurity Security)
{
    /// <summary>
    /// The manager's configuration sections and the options types they bind to, all of them checked by
    /// <see cref="Load"/>; docs/configuration.md documents each (a test holds the two together).
    /// </summary>
    internal static IReadOnlyList<(string Section, Type Options)> Sections { get; } =
    [
        (ClusterOptions.SectionName, typeof(ClusterOptions)),
        (ManagerOptions.SectionName, typeof(ManagerOptions)),
        (SecurityOptions.SectionName, typeof(SecurityOptions)),
        (Quintet.Manager.Security.AuditOptions.SectionName, typeof(Quintet.Manager.Security.AuditOptions)),
        (StoreOptions.SectionName, typeof(StoreOptions)),
        (SharedStructuresOptions.SectionName, typeof(SharedStructuresOptions)),
        (CompletionRecordsOptions.SectionName, typeof(CompletionRecordsOptions)),
        (EventLogOptions.SectionName, typeof(EventLogOptions)),
        (Quintet.Core.Groups.GroupsOptions.SectionName, typeof(Quintet.Core.Groups.GroupsOptions)),
        (Quintet.Manager.Diagnostics.DiagnosticsOptions.SectionName, typeof(Quintet.Manager.Diagnostics.DiagnosticsOptions)),

        // A list: each entry's settings are those of the type.
        (ExtensionOptions.SectionName, typeof(ExtensionOptions)),
    ];

    /// <summary>The entries of <c>Quintet:Extensions</c>, disabled ones included; their assemblies are not loaded yet.</summary>
    public IReadOnlyList<ExtensionOptions> Extensions { get; init; } = [];

    /// <summary>The gRPC host actually used: <see cref="ManagerOptions.GrpcHost"/>, or the cluster host.</summary>
    public string GrpcHost => Manager.GrpcHost ?? Cluster.Host;

    /// <summary>The node name actually used.</summary>
    public string NodeName => Manager.NodeName ?? $"{Environment.MachineName}-{Cluster.Port}";

    /// <summary>
    /// Reads and validates the settings; <c>Quintet:Store:Kind</c> must name one of <paramref name="kinds"/> (the
    /// manager's built-in kinds when null), whose own settings (<c>Quintet:Store:&lt;kind&gt;</c>) are checked too.
    /// </summary>
    /// <exception cref="ConfigurationErrorException">Some setting is unknown, unreadable or invalid.</exception>
    public static StartupSettings Load(IConfiguration configuration, CheckpointStoreKinds? kinds = null)
    {
        kinds ??= CheckpointStoreServiceCollectionExtensions.BuiltInKinds();
        var failures = new List<string>();
        var cluster = Bind<ClusterOptions>(configuration, ClusterOptions.SectionName, failures);
        var manager = Bind<ManagerOptions>(configuration, ManagerOptions.SectionName, failures);
        var groups = Bind<Quintet.Core.Groups.GroupsOptions>(configuration, Quintet.Core.Groups.GroupsOptions.SectionName, failures);
        Bind<Quintet.Manager.Diagnostics.DiagnosticsOptions>(configuration, Quintet.Manager.Diagnostics.DiagnosticsOptions.SectionName, failures);
        var store = Bind<StoreOptions>(configuration, StoreOptions.SectionName, failures, KindSections(kinds));
        var structures = Bind<SharedStructuresOptions>(configuration, SharedStructuresOptions.SectionName, failures);
        var completions = Bind<CompletionRecordsOptions>(configuration, CompletionRecordsOptions.SectionName, failures);
        var events = Bind<EventLogOptions>(configuration, EventLogOptions.SectionName, failures);
        var securityOptions = Bind<SecurityOptions>(configuration, SecurityOptions.SectionName, failures);
        var audit = Bind<Quintet.Manager.Security.AuditOptions>(configuration, Quintet.Manager.Security.AuditOptions.SectionName, failures);
        var extensions = ExtensionOptions.Read(configuration, failures);
        if (audit is { MaxEntries: < 100 })
        {
            failures.Add($"{Quintet.Manager.Security.AuditOptions.SectionName}:MaxEntries: {audit.MaxEntries} is too small; keep at least 100 entries.");
        }

        // Loaded first, since whether the cluster port uses TLS decides which seed addresses are valid; its failures
        // are reported after the others, in the order of the sections.
        List<string> securityFailures = [];
        var security = cluster is not null && manager is not null && securityOptions is not null
            ? LoadSecurity(securityOptions, ExposedHosts(cluster, manager), securityFailures)
            : null;
        if (cluster is not null)
        {
            AddFailures(new ClusterOptionsValidator(security).Validate(null, cluster), failures);
        }

        if (manager is not null)
        {
            AddFailures(new ManagerOptionsValidator().Validate(null, manager), failures);
        }

        if (store is not null)
        {
            failures.AddRange(store.Validate(kinds, configuration));
        }

        if (structures is not null)
        {
            failures.AddRange(structures.Validate());
        }

        if (groups is not null)
        {
            failures.AddRange(groups.Protocol.Problems());
        }

        if (completions is not null)
        {
            failures.AddRange(completions.Validate());
        }

        if (events is not null)
        {
            failures.AddRange(events.Validate());
        }

        failures.AddRange(securityFailures);
        if (failures.Count > 0 || cluster is null || manager is null || store is null || structures is null || security is null)
        {
            security?.Dispose();
            throw new ConfigurationErrorException(failures);
        }

        return new StartupSettings(cluster, manager, store, structures, security) { Extensions = extensions };
    }

    /// <summary>
    /// The hosts this manager would listen on, of those valid: an invalid one is reported by its own validator, and the
    /// gRPC host must be an address (or <c>localhost</c>), the cluster host may be a name.
    /// </summary>
    private static string[] ExposedHosts(ClusterOptions cluster, ManagerOptions manager)
    {
        var grpcHost = manager.GrpcHost ?? cluster.Host;
        return [.. new[] { cluster.Host }.Where(ClusterAddress.IsValidHost)
            .Concat(new[] { grpcHost }.Where(h => IPAddress.TryParse(h, out _) || ClusterSecurity.IsLoopback(h)))];
    }

    /// <summary>
    /// Loads the manager's certificates; without them, refuses every address but loopback unless told the network is
    /// private (<see cref="SecurityOptions.AllowInsecure"/>): secure by default.
    /// </summary>
    private static ClusterSecurity? LoadSecurity(SecurityOptions options, string[] hosts, List<string> failures)
    {
        if (!options.Enabled)
        {
            var exposed = hosts.Where(h => !ClusterSecurity.IsLoopback(h)).Distinct(StringComparer.OrdinalIgnoreCase).ToList();
            if (exposed.Count > 0 && !options.AllowInsecure)
            {
                failures.Add($"{SecurityOptions.SectionName}: this manager would listen on {string.Join(" and ", exposed)} with no security: anyone who reaches it could deploy code. " +
                    $"Create certificates (quintet certs create-ca, then create-manager) and set {SecurityOptions.SectionName}:CertificatesDirectory, or listen on 127.0.0.1 (docs/security.md).");
                return null;
            }

            return ClusterSecurity.Open;
        }

        try
        {
            return ClusterSecurity.Load(options);
        }
        catch (CertificateException e)
        {
            failures.Add($"{SecurityOptions.SectionName}: {e.Message}");
            return null;
        }
    }

    // A store kind's own settings are a child section of Quintet:Store named after it, of the type the kind declares.
    private static Dictionary<string, Type?> KindSections(CheckpointStoreKinds kinds) =>
        kinds.All.ToDictionary(k => k.Name, k => k.SettingsType, StringComparer.OrdinalIgnoreCase);

    private static T? Bind<T>(IConfiguration configuration, string sectionName, List<string> failures, IReadOnlyDictionary<string, Type?>? children = null)
        where T : class, new()
    {
        var section = configuration.GetSection(sectionName);
        var unknown = UnknownSettings(section, typeof(T), children).ToList();
        failures.AddRange(unknown.Select(path => $"{path}: is not a known setting; check its spelling (see docs/configuration.md)."));
        if (unknown.Count > 0)
        {
            return null;
        }

        try
        {
            return section.Get<T>() ?? new T();
        }
        catch (InvalidOperationException ex)
        {
            // The binder names the full path of the value it could not convert.
            failures.Add(ex.InnerException is { } inner ? $"{ex.Message} {inner.Message}" : ex.Message);
            return null;
        }
    }

    private static IEnumerable<string> UnknownSettings(IConfigurationSection section, Type type, IReadOnlyDictionary<string, Type?>? children = null)
    {
        foreach (var child in section.GetChildren())
        {
            if (children is not null && children.TryGetValue(child.Key, out var childType))
            {
                // A section only the kind reads: checked against its settings type, or not at all when it declares none.
                foreach (var path in childType is null ? [] : UnknownSettings(child, childType))
                {
                    yield return path;
                }

                continue;
            }

            var property = type.GetProperty(child.Key, BindingFlags.Public | BindingFlags.Instance | BindingFlags.IgnoreCase);
            if (property is null || !property.CanWrite)
            {
                yield return child.Path;
                continue;
            }

            var propertyType = Nullable.GetUnderlyingType(property.PropertyType) ?? property.PropertyType;
            if (IsComplex(propertyType))
            {
                foreach (var path in UnknownSettings(child, propertyType))
                {
                    yield return path;
                }
            }
        }
    }

    private static bool IsComplex(Type type) =>
        type.IsClass && type != typeof(string) && !typeof(IEnumerable).IsAssignableFrom(type);

    private static void AddFailures(ValidateOptionsResult result, List<string> failures)
    {
        if (result.Failed)
        {
            failures.AddRange(result.Failures);
        }
    }
}
