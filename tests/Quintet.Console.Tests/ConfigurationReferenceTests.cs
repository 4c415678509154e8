using Quintet.Console.Hosting;
using Quintet.Testing;

namespace Quintet.Console.Tests;

/// <summary>docs/configuration.md's <c>Quintet:Console</c> table against <see cref="ConsoleOptions"/>.</summary>
public sealed class ConfigurationReferenceTests
{
    [Fact]
    public void Every_console_setting_is_documented_with_its_default_and_nothing_else_is()
    {
        SettingsReference.Check(ConsoleOptions.Section, typeof(ConsoleOptions));
    }

    [Fact]
    public void Every_switch_is_named_in_the_row_of_the_setting_it_sets()
    {
        var rows = SettingsReference.Rows().Where(r => r.Section == ConsoleOptions.Section).ToList();
        var lines = SettingsReference.Page.Split('\n');
        foreach (var (name, setting) in ConsoleOptions.SwitchMappings)
        {
            var key = setting[(ConsoleOptions.Section.Length + 1)..];
            var row = Assert.Single(rows, r => r.Key == key);
            Assert.Contains($"`{name}`", lines[row.Line - 1], StringComparison.Ordinal);
        }
    }
}
