using System.Reflection;
using System.Text.RegularExpressions;
using Microsoft.Extensions.Configuration;
using Quintet.Manager.Configuration;
using Quintet.Manager.Hosting;
using Quintet.Manager.Lifetime;
using Quintet.Manager.Persistence;
using Quintet.Persistence.PostgreSql;
using Quintet.Testing;

namespace Quintet.Manager.Tests;

/// <summary>docs/configuration.md against the manager's code: its settings, their defaults, its exit codes.</summary>
public sealed partial class ConfigurationReferenceTests
{
    public static TheoryData<string> Sections() => [.. StartupSettings.Sections.Select(s => s.Section)];

    [Theory]
    [MemberData(nameof(Sections))]
    public void Every_setting_of_the_section_is_documented_with_its_default_and_nothing_else_is(string section)
    {
        var options = StartupSettings.Sections.Single(s => s.Section == section).Options;
        // A checkpoint store kind's own settings are a child section of Quintet:Store named after the kind: the built-in
        // kinds' and the postgresql kind's, which the quintet-manager executable adds.
        var children = section == StoreOptions.SectionName
            ? CheckpointStoreServiceCollectionExtensions.BuiltInKinds().All.Where(k => k.SettingsType is not null).ToDictionary(k => k.Name, k => k.SettingsType!)
            : null;
        children?.Add(PostgresCheckpointStoreOptions.KindName, typeof(PostgresCheckpointStoreOptions));

        SettingsReference.Check(section, options, children);
    }

    [Theory]
    [MemberData(nameof(Sections))]
    public void The_manager_checks_every_section_it_documents(string section)
    {
        var configuration = new ConfigurationBuilder()
            .AddInMemoryCollection([new KeyValuePair<string, string?>($"{section}:NoSuchSetting", "1")])
            .Build();

        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(configuration));

        Assert.Contains($"{section}:NoSuchSetting: is not a known setting; check its spelling (see docs/configuration.md).", error.Failures);
    }

    [Fact]
    public void Every_documented_section_is_one_the_manager_or_another_program_reads()
    {
        string[] otherPrograms = ["Quintet:Console", "Quintet:Proxy", "Quintet:Client"];
        var documented = SettingsReference.Rows().Select(r => r.Section).Distinct().ToList();

        Assert.Empty(documented.Except(StartupSettings.Sections.Select(s => s.Section)).Except(otherPrograms));
        Assert.Empty(StartupSettings.Sections.Select(s => s.Section).Except(documented));
    }

    [Fact]
    public void Every_exit_code_is_in_the_table_and_every_row_is_an_exit_code()
    {
        var codes = typeof(ManagerExitCode).GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsLiteral)
            .Select(f => (int)f.GetRawConstantValue()!).Order().ToList();
        var table = SettingsReference.Page[SettingsReference.Page.IndexOf("## Exit codes", StringComparison.Ordinal)..];
        table = table[..table.IndexOf("\n\n", table.IndexOf("| code |", StringComparison.Ordinal), StringComparison.Ordinal)];

        var rows = ExitCodeRow().Matches(table).Select(m => int.Parse(m.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture)).Order().ToList();

        Assert.Equal(5, codes.Count);
        Assert.Equal(codes, rows);
    }

    [GeneratedRegex(@"(?m)^\| (\d+) \|")]
    private static partial Regex ExitCodeRow();
}
