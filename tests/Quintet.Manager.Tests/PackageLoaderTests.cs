using System.Buffers;
using System.Runtime.CompilerServices;
using ProtoBuf.Meta;
using Quintet.Manager.Calls;
using Quintet.Manager.Packages;
using Samples.Counter;

namespace Quintet.Manager.Tests;

/// <summary>Loading packages: the Counter sample loads in a context of its own; every broken package is refused by name.</summary>
public sealed class PackageLoaderTests : IDisposable
{
    private const string ValidManifest = """{"name":"Counter","version":"1.0.0","assembly":"Counter.dll","components":[{"class":"Samples.Counter.CounterComponent","contracts":["Samples.Counter.ICounter"]}]}""";
    private readonly string _root = Directory.CreateTempSubdirectory("quintet-package-tests-").FullName;

    private string Package(string? manifest = ValidManifest, bool withAssembly = true, params (string Name, string Text)[] files)
    {
        var directory = Path.Combine(_root, Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(directory);
        if (withAssembly)
        {
            File.Copy(typeof(CounterComponent).Assembly.Location, Path.Combine(directory, "Counter.dll"));
        }

        if (manifest is not null)
        {
            File.WriteAllText(Path.Combine(directory, PackageManifest.FileName), manifest);
        }

        foreach (var (name, text) in files)
        {
            File.WriteAllText(Path.Combine(directory, name), text);
        }

        return directory;
    }

    private static string Refused(string directory) => Assert.Throws<PackageException>(() => PackageLoader.Load(directory)).Message;

    [Fact]
    public async Task The_counter_loads_in_its_own_context_and_its_operations_run()
    {
        var package = PackageLoader.Load(Package());

        var counter = Assert.Single(package.Classes);
        var contract = Assert.Single(counter.Contracts);
        Assert.Equal("samples.counter.Counter", contract.ServiceName);
        Assert.Equal(["Add", "Get"], contract.Operations.Keys.Order());
        Assert.NotSame(typeof(CounterComponent), counter.Type);

        var instance = counter.CreateInstance();
        var storeDirectory = Directory.CreateTempSubdirectory("quintet-loader-");
        using var checkpoints = new Quintet.Persistence.LocalCheckpointStore(storeDirectory.FullName, Microsoft.Extensions.Logging.Abstractions.NullLogger<Quintet.Persistence.LocalCheckpointStore>.Instance);
        var context = new Quintet.Components.ComponentContext("Samples.Counter.CounterComponent", "k", "test") { Checkpoints = checkpoints.Open("Samples.Counter.CounterComponent/k") };
        await ((Quintet.Components.IComponentLifecycle)instance).ActivateAsync(context, Quintet.Components.ActivationReason.Created, CancellationToken.None);
        var add = contract.Operations["Add"];
        var request = add.ReadRequest(new ReadOnlySequence<byte>([0x08, 0x05]));
        var response = await add.InvokeAsync(instance, request, CancellationToken.None);
        var writer = new ArrayBufferWriter<byte>();
        add.WriteResponse(writer, response);
        Assert.Equal<byte>([0x08, 0x05, 0x12, 0x04, (byte)'t', (byte)'e', (byte)'s', (byte)'t'], writer.WrittenSpan.ToArray());
        Assert.Contains("service Counter", contract.ExportProto(), StringComparison.Ordinal);
        checkpoints.Dispose();
        storeDirectory.Delete(recursive: true);
    }

    [Fact]
    public void An_undeployed_package_is_unloaded() => Assert.True(LoadAndUnload(Package(), Load), "the package's context was not collected");

    [Fact]
    public void An_undeployed_package_whose_operations_were_called_is_unloaded() =>
        Assert.True(LoadAndUnload(Package(), LoadAndCall), "the context of a package that served a call was not collected");

    /// <summary>
    /// A thread waiting on a package model's metadata lock while the manager is paused past protobuf-net's 5 s default
    /// failed its call with "Timeout while inspecting metadata" as the manager resumed: the wait must outlast a pause.
    /// </summary>
    [Fact]
    public void A_package_s_model_waits_out_a_pause_on_its_metadata_lock()
    {
        var package = PackageLoader.Load(Package());
        try
        {
            var model = Assert.IsType<RuntimeTypeModel>(package.Classes[0].Contracts[0].Operations["Add"].Model);
            Assert.True(model.MetadataTimeoutMilliseconds >= 30_000, $"the model gives up on its lock after {model.MetadataTimeoutMilliseconds} ms");
        }
        finally
        {
            package.Unload();
        }
    }

    [Fact]
    public void The_protobuf_caches_an_unloading_package_is_removed_from_are_all_found() => Assert.Equal(3, ProtobufTypeCaches.Found);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool LoadAndUnload(string directory, Func<string, WeakReference> load)
    {
        var reference = load(directory);
        for (var i = 0; i < 20 && reference.IsAlive; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        return !reference.IsAlive;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference Load(string directory) => PackageLoader.Load(directory).Unload();

    /// <summary>Loads the package and runs each message of an operation through its codec, as a call and a management call do, then unloads it.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference LoadAndCall(string directory)
    {
        var package = PackageLoader.Load(directory);
        var add = package.Classes[0].Contracts[0].Operations["Add"];
        var request = add.ReadRequest(new ReadOnlySequence<byte>([0x08, 0x05]));
        var writer = new ArrayBufferWriter<byte>();
        add.WriteResponse(writer, null);
        Assert.Equal<byte>([0x08, 0x05], add.WriteRequest(request));
        Assert.NotNull(add.ReadResponse(writer.WrittenMemory));
        return package.Unload();
    }

    [Fact]
    public void A_package_without_a_manifest_is_refused() =>
        Assert.Contains("has no quintet-package.json", Refused(Package(manifest: null)), StringComparison.Ordinal);

    [Fact]
    public void A_manifest_that_is_not_json_is_refused() =>
        Assert.Contains("is not valid", Refused(Package("{ name: ")), StringComparison.Ordinal);

    [Fact]
    public void A_manifest_with_an_unknown_field_is_refused() =>
        Assert.Contains("replicas", Refused(Package(ValidManifest.Replace("\"version\"", "\"replicas\":3,\"version\"", StringComparison.Ordinal))), StringComparison.Ordinal);

    [Fact]
    public void A_manifest_without_a_name_is_refused() =>
        Assert.Contains("name is missing", Refused(Package(ValidManifest.Replace("\"Counter\"", "\"\"", StringComparison.Ordinal))), StringComparison.Ordinal);

    [Fact]
    public void A_missing_assembly_is_refused() =>
        Assert.Contains("Counter.dll that quintet-package.json names is not in the package", Refused(Package(withAssembly: false)), StringComparison.Ordinal);

    [Fact]
    public void An_assembly_that_is_not_one_is_refused()
    {
        var directory = Package(withAssembly: false);
        File.WriteAllText(Path.Combine(directory, "Counter.dll"), "not an assembly");
        Assert.Contains("not a .NET assembly", Refused(directory), StringComparison.Ordinal);
    }

    [Fact]
    public void A_class_that_is_not_a_component_is_refused() =>
        Assert.Contains("derived from Quintet.Components.Component", Refused(Package(ValidManifest.Replace("Samples.Counter.CounterComponent", "Samples.Counter.AddRequest", StringComparison.Ordinal))), StringComparison.Ordinal);

    [Fact]
    public void A_contract_the_class_does_not_implement_is_refused() =>
        Assert.Contains("does not implement Samples.Counter.IOther", Refused(Package(ValidManifest.Replace("Samples.Counter.ICounter", "Samples.Counter.IOther", StringComparison.Ordinal))), StringComparison.Ordinal);

    [Fact]
    public void A_class_the_qos_file_does_not_list_gets_the_default_spec() =>
        Assert.Equal(Quintet.Components.QosSpec.Default, Assert.Single(PackageLoader.Load(Package()).Classes).Qos);

    [Theory]
    [InlineData("quintet-qos.yaml", "Samples.Counter.CounterComponent:\n  replication: primaryBackup\n  replicas: 2\n  retireAfterIdle: 30s\n")]
    [InlineData("quintet-qos.json", """{"Samples.Counter.CounterComponent": {"replication": "primaryBackup", "replicas": 2, "retireAfterIdle": "30s"}}""")]
    public void A_qos_file_sets_each_listed_class_spec(string fileName, string text)
    {
        var counter = Assert.Single(PackageLoader.Load(Package(files: (fileName, text))).Classes);

        Assert.Equal(
            new Quintet.Components.QosSpec { Replication = Quintet.Components.ReplicationStyle.PrimaryBackup, Replicas = 2, RetireAfterIdle = TimeSpan.FromSeconds(30) },
            counter.Qos);
    }

    [Fact]
    public void A_bad_qos_file_is_refused_with_every_error()
    {
        var message = Refused(Package(files: ("quintet-qos.yaml", """
            Samples.Counter.CounterComponent:
              replication: active
              replicas: 1
              retireAfterIdle: 30s
            Samples.Counter.Missing:
              debug: true
            """)));

        Assert.Equal(
            """
            quintet-qos.yaml is not valid:
              Samples.Counter.CounterComponent.replicas: must be 2 to 16 for active, was 1
              Samples.Counter.CounterComponent.retireAfterIdle: not allowed for active replication
              Samples.Counter.Missing: not a component class of this package; its classes are Samples.Counter.CounterComponent
            """.ReplaceLineEndings("\n"),
            message);
    }

    [Theory]
    [InlineData("Samples.Counter.Nowhere", "components[0].factory: Samples.Counter.Nowhere is not in Counter.")]
    [InlineData("Samples.Counter.CounterComponent", "components[0].factory: Samples.Counter.CounterComponent must be a non-abstract class derived from Quintet.Components.ClassFactory<Samples.Counter.CounterComponent>.")]
    public void A_factory_that_is_not_a_factory_of_the_class_is_refused(string factory, string expected) =>
        Assert.Equal(expected, Refused(Package(manifest: WithFactory(factory))));

    [Fact]
    public void The_factory_the_manifest_names_makes_the_keys()
    {
        var counter = Assert.Single(PackageLoader.Load(Package(manifest: WithFactory("Samples.Counter.CounterFactory"))).Classes);
        var context = new Quintet.Components.CreateInstanceContext(counter.Name, Quintet.Components.QosSpec.Default, ["m1", "m2"], "m2");
        Assert.StartsWith("counter-", counter.Factory.NewKey(context), StringComparison.Ordinal);
        Assert.Equal("m2", counter.Factory.Place(context));
        Assert.Null(Assert.Single(PackageLoader.Load(Package()).Classes).Factory.Place(context));
    }

    private static string WithFactory(string factory) =>
        ValidManifest.Replace("\"contracts\":[\"Samples.Counter.ICounter\"]", $"\"contracts\":[\"Samples.Counter.ICounter\"],\"factory\":\"{factory}\"", StringComparison.Ordinal);

    [Fact]
    public void Two_qos_files_are_refused() =>
        Assert.Equal(
            "The package has both quintet-qos.yaml and quintet-qos.json; keep one QoS file.",
            Refused(Package(files: [("quintet-qos.yaml", ""), ("quintet-qos.json", "{}")])));

    [Theory]
    [InlineData("100m", 100 * TimeSpan.TicksPerMillisecond)]
    [InlineData("5S", 5 * TimeSpan.TicksPerSecond)]
    [InlineData("2M", 2 * TimeSpan.TicksPerMinute)]
    [InlineData("1H", TimeSpan.TicksPerHour)]
    [InlineData("2500u", 25_000)]
    public void Grpc_timeouts_parse(string header, long ticks)
    {
        Assert.True(UnaryFraming.TryParseTimeout(header, out var timeout));
        Assert.Equal(ticks, timeout.Ticks);
    }

    [Theory]
    [InlineData("")]
    [InlineData("S")]
    [InlineData("10")]
    [InlineData("-5S")]
    [InlineData("123456789S")]
    [InlineData("5s")]
    public void Bad_grpc_timeouts_are_refused(string header) => Assert.False(UnaryFraming.TryParseTimeout(header, out _));

    public void Dispose() => Directory.Delete(_root, recursive: true);
}
