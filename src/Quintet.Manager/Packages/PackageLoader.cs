using System.Linq.Expressions;
using System.Reflection;
using ProtoBuf;
using ProtoBuf.Meta;
using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>A package loaded in its own collectible context: its component classes, ready to instantiate and call.</summary>
internal sealed class ComponentPackage(PackageManifest manifest, string directory, PackageLoadContext context, IReadOnlyList<ComponentClass> classes)
{
    /// <summary>The SHA-256 of the zip it was deployed from (empty when loaded from a folder): equal hashes, same package.</summary>
    public byte[] Sha256 { get; set; } = [];

    public string Name => manifest.Name;

    public string Version => manifest.Version;

    public string Directory { get; } = directory;

    public IReadOnlyList<ComponentClass> Classes { get; } = classes;

    /// <summary>Every role the package declares, on any class, contract or operation, sorted; empty when it declares none.</summary>
    public IReadOnlyList<string> Roles { get; } =
    [
        .. classes.SelectMany(c => c.Roles.Concat(c.Contracts.SelectMany(contract => contract.Roles.Concat(contract.Operations.Values.SelectMany(o => o.Roles)))))
            .Distinct(StringComparer.Ordinal).Order(StringComparer.Ordinal),
    ];

    /// <summary>Starts unloading the package's assemblies; the reference tells when the runtime has let them go.</summary>
    public WeakReference Unload()
    {
        context.Unload();
        return new WeakReference(context);
    }
}

/// <summary>
/// Loads a package from a folder and checks it through: the manifest, its QoS file, the assembly, every class and
/// contract it names, and every operation's shape. Anything wrong is refused with a <see cref="PackageException"/> that names it, and the
/// half-loaded context is unloaded: a refused package changes nothing.
/// </summary>
internal static class PackageLoader
{
    /// <summary>The names a package's optional QoS file may have, at its root: component class names mapped to specs.</summary>
    public static readonly IReadOnlyList<string> QosFileNames = ["quintet-qos.yaml", "quintet-qos.yml", "quintet-qos.json"];

    /// <summary>
    /// How long a thread waits for a package model's metadata lock before protobuf-net gives up: longer than a pause a
    /// manager survives without being removed (the failure detector's budget), so that only a real deadlock trips it.
    /// </summary>
    internal static readonly TimeSpan MetadataLockTimeout = TimeSpan.FromSeconds(60);

    /// <summary>The largest QoS file read: a few lines per component class; YAML parsing costs grow with its size.</summary>
    public const int MaxQosFileBytes = 256 * 1024;

    public static ComponentPackage Load(string directory)
    {
        var manifest = PackageManifest.Read(directory);
        var qos = ReadQos(directory, manifest);
        var assemblyPath = Path.Combine(directory, manifest.Assembly);
        if (!File.Exists(assemblyPath))
        {
            throw new PackageException($"The assembly {manifest.Assembly} that {PackageManifest.FileName} names is not in the package.");
        }

        // Every assembly the package's context may load, read as data before the runtime maps any of it.
        foreach (var file in Directory.EnumerateFiles(directory, "*.dll").Order(StringComparer.Ordinal))
        {
            AssemblyImageCheck.Check(file, Path.GetFileName(file));
        }

        var context = new PackageLoadContext(manifest.Name, directory);
        try
        {
            Assembly assembly;
            try
            {
                assembly = context.LoadFromAssemblyPath(assemblyPath);
            }
            catch (BadImageFormatException e)
            {
                throw new PackageException($"{manifest.Assembly} is not a .NET assembly this manager can load: {e.Message}", e);
            }

            AssemblyCompilation.CompileAll(assembly, manifest.Assembly);

            // One protobuf-net model per package: it holds the package's types and goes with them on undeploy.
            var model = RuntimeTypeModel.Create($"quintet-package-{manifest.Name}");

            // Its lock is held while a type is first inspected. A manager paused past protobuf-net's 5 s default would
            // fail the calls waiting on it as it resumes ("Timeout while inspecting metadata"); the pause was no deadlock.
            model.MetadataTimeoutMilliseconds = (int)MetadataLockTimeout.TotalMilliseconds;
            var classes = manifest.Components.Select((entry, i) => LoadClass(assembly, manifest.Name, entry, i, model)).ToList();
            var declaresRoles = classes.Any(c => c.Contracts.Any(contract => contract.Operations.Values.Any(o => o.Roles.Count > 0)));
            foreach (var componentClass in classes)
            {
                componentClass.Qos = qos.GetValueOrDefault(componentClass.Name, QosSpec.Default);
                componentClass.PackageDeclaresRoles = declaresRoles;
                if (IsolationRules.Unsupported(componentClass.Qos) is { } unsupported)
                {
                    throw new PackageException($"{componentClass.Name}.{unsupported}.");
                }

                if (componentClass.Qos.Replication == ReplicationStyle.Active && !typeof(IMigrateState).IsAssignableFrom(componentClass.Type))
                {
                    throw new PackageException($"{componentClass.Name}.replication: active replication needs the class to implement Quintet.Components.IMigrateState, to bring a new replica up to date with the others.");
                }
            }

            var duplicate = classes.SelectMany(c => c.Contracts).GroupBy(c => c.ServiceName, StringComparer.Ordinal).FirstOrDefault(g => g.Count() > 1);
            if (duplicate is not null)
            {
                throw new PackageException($"Contract {duplicate.Key} is served by two classes of the package; a contract names one component class.");
            }

            return new ComponentPackage(manifest, directory, context, classes);
        }
        catch (Exception e) when (e is TypeLoadException or FileNotFoundException or FileLoadException or ReflectionTypeLoadException)
        {
            context.Unload();
            throw new PackageException($"The package is not compatible with this manager (a type or assembly it needs cannot be loaded): {e.Message}", e);
        }
        catch
        {
            context.Unload();
            throw;
        }
    }

    /// <summary>Reads the package's QoS file, if it has one; before any assembly is loaded, so that a bad one costs nothing to refuse.</summary>
    private static IReadOnlyDictionary<string, QosSpec> ReadQos(string directory, PackageManifest manifest)
    {
        var present = QosFileNames.Where(name => File.Exists(Path.Combine(directory, name))).ToList();
        if (present.Count > 1)
        {
            throw new PackageException($"The package has both {string.Join(" and ", present)}; keep one QoS file.");
        }

        if (present.Count == 0)
        {
            return new Dictionary<string, QosSpec>();
        }

        var fileName = present[0];
        if (new FileInfo(Path.Combine(directory, fileName)).Length > MaxQosFileBytes)
        {
            throw new PackageException($"{fileName} is {new FileInfo(Path.Combine(directory, fileName)).Length} bytes; at most {MaxQosFileBytes} are accepted.") { IsMalformed = true };
        }

        try
        {
            return QosSpecReader.ParseClasses(File.ReadAllText(Path.Combine(directory, fileName)), fileName, manifest.Components.Select(c => c.Class).ToList());
        }
        catch (QosSpecException e)
        {
            throw new PackageException($"{fileName} is not valid:\n{string.Join('\n', e.Errors.Select(error => "  " + error))}", e);
        }
    }

    private static ComponentClass LoadClass(Assembly assembly, string packageName, PackageManifest.ComponentEntry entry, int index, TypeModel model)
    {
        var field = $"components[{index}]";
        var type = assembly.GetType(entry.Class, throwOnError: false)
            ?? throw new PackageException($"{field}.class: {entry.Class} is not in {assembly.GetName().Name}.");
        if (!typeof(Component).IsAssignableFrom(type) || type.IsAbstract || !type.IsClass)
        {
            throw new PackageException($"{field}.class: {entry.Class} must be a non-abstract class derived from Quintet.Components.Component.");
        }

        if (type.GetConstructor(Type.EmptyTypes) is null)
        {
            throw new PackageException($"{field}.class: {entry.Class} needs a public constructor without parameters.");
        }

        var classRoles = DeclaredRoles.Own(type, $"{field}.class");
        var contracts = entry.Contracts.Select((name, i) => LoadContract(type, name, $"{field}.contracts[{i}]", model, classRoles)).ToList();
        var create = Expression.Lambda<Func<Component>>(Expression.Convert(Expression.New(type), typeof(Component))).Compile();
        return new ComponentClass(entry.Class, type, contracts, create)
        {
            Factory = LoadFactory(assembly, entry, type, field),
            DebugModule = ManagementModules.LoadDebugModule(type, $"{field}.class"),
            PackageName = packageName,
            Roles = classRoles,
        };
    }

    /// <summary>The class factory the manifest names for a class, or the default one (GUID keys, QoS placement).</summary>
    private static IClassFactory LoadFactory(Assembly assembly, PackageManifest.ComponentEntry entry, Type componentType, string field)
    {
        if (string.IsNullOrWhiteSpace(entry.Factory))
        {
            return DefaultClassFactory.Instance;
        }

        var type = assembly.GetType(entry.Factory, throwOnError: false)
            ?? throw new PackageException($"{field}.factory: {entry.Factory} is not in {assembly.GetName().Name}.");
        var expected = typeof(ClassFactory<>).MakeGenericType(componentType);
        if (!expected.IsAssignableFrom(type) || type.IsAbstract)
        {
            throw new PackageException($"{field}.factory: {entry.Factory} must be a non-abstract class derived from Quintet.Components.ClassFactory<{componentType.FullName}>.");
        }

        if (type.GetConstructor(Type.EmptyTypes) is null)
        {
            throw new PackageException($"{field}.factory: {entry.Factory} needs a public constructor without parameters.");
        }

        try
        {
            return (IClassFactory)Activator.CreateInstance(type)!;
        }
        catch (TargetInvocationException e)
        {
            throw new PackageException($"{field}.factory: the constructor of {entry.Factory} threw {e.InnerException?.GetType().Name}: {e.InnerException?.Message}", e);
        }
    }


    private static ComponentContract LoadContract(Type type, string name, string field, TypeModel model, IReadOnlyList<string> classRoles)
    {
        var contract = type.GetInterfaces().FirstOrDefault(i => i.FullName == name)
            ?? throw new PackageException($"{field}: {type.FullName} does not implement {name}.");
        var attribute = contract.GetCustomAttribute<ComponentContractAttribute>()
            ?? throw new PackageException($"{field}: {name} is not marked [ComponentContract(\"service.name\")].");

        var management = contract.GetCustomAttribute<ManagementContractAttribute>();
        var contractOwn = DeclaredRoles.Own(contract, field);
        if (management is not null && contractOwn.Count > 0)
        {
            throw new PackageException($"{field}: {name} is a management contract, which the cluster's administrative roles open (reader, operator, admin); remove its [ComponentRoles].");
        }

        // The package's roles are for clients; a management contract answers to the administrative roles alone.
        var contractRoles = management is null ? DeclaredRoles.Inherit(contractOwn, classRoles) : [];
        var contractFrom = management is not null ? string.Empty : contractOwn.Count > 0 ? "contract" : classRoles.Count > 0 ? "component" : string.Empty;
        var operations = new Dictionary<string, ComponentOperation>(StringComparer.Ordinal);
        foreach (var method in contract.GetMethods())
        {
            var operationField = $"{field} ({name}.{method.Name})";
            var own = DeclaredRoles.OwnOfOperation(type, method, operationField);
            if (management is not null && own.Count > 0)
            {
                throw new PackageException($"{operationField}: {name} is a management contract, which the cluster's administrative roles open; name the role an operation needs with [ManagementOperation(Role = ...)], not [ComponentRoles].");
            }

            var operation = LoadOperation(method, operationField, model, DeclaredRoles.Inherit(own, contractRoles), own.Count > 0 ? "operation" : contractFrom, management);
            if (!operations.TryAdd(operation.Name, operation))
            {
                throw new PackageException($"{field}: {name} has two operations named {operation.Name}; names must be unique without the Async suffix.");
            }
        }

        if (operations.Count == 0)
        {
            throw new PackageException($"{field}: {name} has no operations.");
        }

        return new ComponentContract(attribute.Name, contract, operations) { Roles = contractRoles, ManagementTitle = management?.Title };
    }

    private static ComponentOperation LoadOperation(MethodInfo method, string field, TypeModel model, IReadOnlyList<string> roles, string rolesDeclaredOn, ManagementContractAttribute? management)
    {
        var parameters = method.GetParameters();
        var returnsTask = method.ReturnType.IsGenericType && method.ReturnType.GetGenericTypeDefinition() == typeof(Task<>);
        var streams = method.ReturnType.IsGenericType && method.ReturnType.GetGenericTypeDefinition() == typeof(IAsyncEnumerable<>);
        if (!(returnsTask || streams) || parameters.Length != 2 || parameters[1].ParameterType != typeof(CancellationToken))
        {
            throw new PackageException($"{field}: an operation must be Task<TResponse> NameAsync(TRequest request, CancellationToken cancellationToken), or a subscription to the instance's events, IAsyncEnumerable<TEvent> NameAsync(TRequest request, CancellationToken cancellationToken).");
        }

        var requestType = parameters[0].ParameterType;
        var responseType = method.ReturnType.GetGenericArguments()[0];
        if (streams && method.GetCustomAttribute<ReadOnlyOperationAttribute>() is not null)
        {
            throw new PackageException($"{field}: [ReadOnlyOperation] is for unary operations; a subscription keeps no completion record anyway.");
        }

        foreach (var (role, messageType) in new[] { ("request", requestType), (streams ? "event" : "response", responseType) })
        {
            if (!messageType.IsClass || messageType.GetCustomAttribute<ProtoContractAttribute>() is null || messageType.GetConstructor(Type.EmptyTypes) is null)
            {
                throw new PackageException($"{field}: the {role} type {messageType.FullName} must be a class marked [ProtoContract] with a constructor without parameters.");
            }
        }

        var name = method.Name.EndsWith("Async", StringComparison.Ordinal) && method.Name.Length > 5 ? method.Name[..^5] : method.Name;
        if (streams && responseType.GetProperties().Any(p => p.GetCustomAttribute<ProtoMemberAttribute>()?.Tag == Quintet.Protocol.EventFrames.PositionField))
        {
            throw new PackageException($"{field}: the event type {responseType.FullName} uses field {Quintet.Protocol.EventFrames.PositionField}, which carries an event's position on the wire; number its fields below it.");
        }

        if (management is not null && streams)
        {
            throw new PackageException($"{field}: a management contract's operations are views and actions, answered once; {method.Name} is a subscription.");
        }

        return new ComponentOperation(name, method, requestType, responseType, model, streams)
        {
            Management = management is null ? null : ManagementModules.Describe(method, name, management, requestType, field),
            Roles = roles,
            RolesDeclaredOn = rolesDeclaredOn,
            KeepsCompletionRecords = !streams && method.GetCustomAttribute<ReadOnlyOperationAttribute>() is null,
        };
    }
}
