using Quintet.Proxy;
using Quintet.Testing;

namespace Quintet.Integration.Tests;

/// <summary>docs/configuration.md's <c>Quintet:Proxy</c> table against <see cref="ProxyOptions"/>.</summary>
public sealed class ProxyConfigurationReferenceTests
{
    [Fact]
    public void Every_proxy_setting_is_documented_with_its_default_and_nothing_else_is()
    {
        SettingsReference.Check(ProxyOptions.SectionName, typeof(ProxyOptions));
        Assert.Equal("Quintet:Client", ProxySettings.ClientSectionName);
    }

    [Fact]
    public void The_proxy_page_lists_every_exit_code()
    {
        var page = File.ReadAllText(Path.Combine(Path.GetDirectoryName(SettingsReference.PagePath)!, "proxy.md"));
        var line = Assert.Single(page.Split('\n'), l => l.StartsWith("Exit codes:", StringComparison.Ordinal));
        var documented = System.Text.RegularExpressions.Regex.Matches(line, @"(?:: |, )(\d+) ").Select(m => int.Parse(m.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture));
        var codes = typeof(ProxyExitCode).GetFields().Where(f => f.IsLiteral).Select(f => (int)f.GetRawConstantValue()!);

        Assert.Equal(codes.Order(), documented.Order());
    }
}
