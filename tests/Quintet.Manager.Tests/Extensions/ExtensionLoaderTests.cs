using Microsoft.Extensions.Configuration;
using Quintet.Manager.Configuration;
using Quintet.Manager.Extensions;
using Quintet.Manager.Hosting;

namespace Quintet.Manager.Tests.Extensions;

/// <summary>
/// Loading <c>Quintet:Extensions</c>: a good entry loads in a context of its own, and every mistake stops the manager
/// with a message that names its setting.
/// </summary>
public class ExtensionLoaderTests
{
    private const string Test = "TestExtensions.dll";
    private static readonly string Folder = AppContext.BaseDirectory;

    private static IConfiguration Config(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder().AddInMemoryCollection(values.Select(v => new KeyValuePair<string, string?>(v.Key, v.Value))).Build();

    private static IReadOnlyList<LoadedExtension> Load(params (string Key, string Value)[] values) =>
        ExtensionLoader.Load(StartupSettings.Load(Config(values)).Extensions, Folder);

    private static string Failure(params (string Key, string Value)[] values) =>
        Assert.Single(Assert.Throws<ConfigurationErrorException>(() => Load(values)).Failures);

    [Fact]
    public void An_entry_loads_its_one_extension_in_a_context_of_its_own_and_a_disabled_one_loads_nothing()
    {
        var loaded = Load(
            ("Quintet:Extensions:0:Name", "slow"),
            ("Quintet:Extensions:0:Assembly", "SlowCalls.dll"),
            ("Quintet:Extensions:0:Settings:ThresholdMs", "250"),
            ("Quintet:Extensions:1:Name", "quiet"),
            ("Quintet:Extensions:1:Assembly", Path.Combine(Folder, Test)),
            ("Quintet:Extensions:1:Type", "Quintet.Manager.Tests.Extensions.QuietExtension"),
            ("Quintet:Extensions:2:Name", "off"),
            ("Quintet:Extensions:2:Assembly", "nowhere.dll"),
            ("Quintet:Extensions:2:Enabled", "false"));

        Assert.Equal(["slow", "quiet"], loaded.Select(e => e.Name));
        Assert.Equal("Samples.SlowCalls.SlowCallsExtension", loaded[0].Type.FullName);
        Assert.Equal("250", loaded[0].Options.Settings["ThresholdMs"]);
        Assert.Equal("Quintet:Extensions:1", loaded[1].Options.Path);
        var context = System.Runtime.Loader.AssemblyLoadContext.GetLoadContext(loaded[0].Type.Assembly)!;
        Assert.Equal("quintet-extension:slow", context.Name);

        // The interface is the manager's own: the extension's context shares Quintet.Abstractions.
        Assert.Same(typeof(Quintet.Extensions.IManagerExtension).Assembly, loaded[0].Type.GetInterfaces().Single(i => i.Name == "IManagerExtension").Assembly);
    }

    [Fact]
    public void A_missing_assembly_is_named_with_where_it_was_looked_for()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", "extensions/Audit.dll"));

        Assert.Equal($"Quintet:Extensions:0:Assembly: '{Path.Combine(Folder, "extensions", "Audit.dll")}' does not exist (a relative path starts from the manager's folder, {Folder}).", failure);
    }

    [Fact]
    public void A_file_that_is_not_an_assembly_is_named()
    {
        var path = Path.Combine(Path.GetTempPath(), $"not-an-assembly-{Guid.NewGuid():N}.dll");
        File.WriteAllText(path, "hello");
        try
        {
            var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", path));

            Assert.StartsWith($"Quintet:Extensions:0:Assembly: '{path}' cannot be loaded as a .NET assembly: ", failure, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void A_type_not_found_is_named_with_the_extensions_the_assembly_has()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", Test), ("Quintet:Extensions:0:Type", "Acme.AuditExtension"));

        Assert.Equal(
            "Quintet:Extensions:0:Type: 'Acme.AuditExtension' is not a type of TestExtensions.dll; its public extensions: Quintet.Manager.Tests.Extensions.NeedsArgumentExtension, "
            + "Quintet.Manager.Tests.Extensions.QuietExtension, Quintet.Manager.Tests.Extensions.ThrowingConstructorExtension.",
            failure);
    }

    [Fact]
    public void A_type_that_is_not_an_extension_is_named()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", Test), ("Quintet:Extensions:0:Type", "Quintet.Manager.Tests.Extensions.NotAnExtension"));

        Assert.Equal("Quintet:Extensions:0:Type: 'Quintet.Manager.Tests.Extensions.NotAnExtension' does not implement Quintet.Extensions.IManagerExtension.", failure);
    }

    [Fact]
    public void Without_a_type_an_assembly_of_several_extensions_asks_for_one()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", Test));

        Assert.StartsWith("Quintet:Extensions:0:Type: TestExtensions.dll has 3 public extensions (", failure, StringComparison.Ordinal);
        Assert.EndsWith("); name the one to load in Quintet:Extensions:0:Type.", failure, StringComparison.Ordinal);
    }

    [Fact]
    public void Without_a_type_an_assembly_of_no_extension_is_named()
    {
        // Counter.dll, a component package, is beside the tests too.
        var failure = Failure(("Quintet:Extensions:0:Name", "counter"), ("Quintet:Extensions:0:Assembly", "Counter.dll"));

        Assert.Equal("Quintet:Extensions:0:Assembly: Counter.dll has no public class that implements Quintet.Extensions.IManagerExtension.", failure);
    }

    [Fact]
    public void A_type_without_a_parameterless_constructor_is_named()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", Test), ("Quintet:Extensions:0:Type", "Quintet.Manager.Tests.Extensions.NeedsArgumentExtension"));

        Assert.Equal(
            "Quintet:Extensions:0:Type: 'Quintet.Manager.Tests.Extensions.NeedsArgumentExtension' has no public parameterless constructor; the manager creates the extension with none, and hands it what it needs in StartAsync.",
            failure);
    }

    [Fact]
    public void A_constructor_that_throws_is_named_with_its_message()
    {
        var failure = Failure(("Quintet:Extensions:0:Name", "audit"), ("Quintet:Extensions:0:Assembly", Test), ("Quintet:Extensions:0:Type", "Quintet.Manager.Tests.Extensions.ThrowingConstructorExtension"));

        Assert.Equal("Quintet:Extensions:0:Type: the constructor of 'Quintet.Manager.Tests.Extensions.ThrowingConstructorExtension' failed: no licence file found", failure);
    }

    [Fact]
    public void Two_extensions_with_one_name_are_refused_naming_both_entries()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Extensions:0:Name", "slow"),
            ("Quintet:Extensions:0:Assembly", "SlowCalls.dll"),
            ("Quintet:Extensions:1:Name", "Slow"),
            ("Quintet:Extensions:1:Assembly", "SlowCalls.dll"))));

        Assert.Equal(["Quintet:Extensions:1:Name: 'Slow' is already the name of Quintet:Extensions:0; each extension needs a name of its own."], error.Failures);
    }

    [Fact]
    public void An_entry_without_name_or_assembly_and_unknown_settings_are_each_named_at_once()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Extensions:0:Type", "Acme.AuditExtension"),
            ("Quintet:Extensions:0:Enabeld", "false"),
            ("Quintet:Extensions:1:Name", "bad name"),
            ("Quintet:Extensions:1:Assembly", "a.dll"),
            ("Quintet:Extensions:1:Enabled", "yes"),
            ("Quintet:Extensions:Name", "slow"))));

        Assert.Equal(
            [
                "Quintet:Extensions:0:Enabeld: is not a known setting; check its spelling (see docs/configuration.md).",
                "Quintet:Extensions:0:Name: is required: a name for the extension, unique among Quintet:Extensions (its problems and logs carry it).",
                "Quintet:Extensions:0:Assembly: is required: the path of the extension's .dll, absolute or relative to the manager's folder.",
                "Quintet:Extensions:1:Enabled: 'yes' is not true or false.",
                "Quintet:Extensions:1:Name: 'bad name' is not a name; use letters, digits, '.', '-' and '_' (at most 64).",
                "Quintet:Extensions:Name: is not a known setting; check its spelling (see docs/configuration.md).",
            ],
            error.Failures);
    }

    [Fact]
    public void Every_entry_is_tried_so_that_every_mistake_is_reported_at_once()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => Load(
            ("Quintet:Extensions:0:Name", "a"),
            ("Quintet:Extensions:0:Assembly", "missing.dll"),
            ("Quintet:Extensions:1:Name", "b"),
            ("Quintet:Extensions:1:Assembly", Test),
            ("Quintet:Extensions:1:Type", "Quintet.Manager.Tests.Extensions.NotAnExtension")));

        Assert.Collection(
            error.Failures,
            a => Assert.StartsWith("Quintet:Extensions:0:Assembly: ", a, StringComparison.Ordinal),
            b => Assert.StartsWith("Quintet:Extensions:1:Type: ", b, StringComparison.Ordinal));
    }
}
