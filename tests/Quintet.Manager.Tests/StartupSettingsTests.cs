using Microsoft.Extensions.Configuration;
using Quintet.Manager.Configuration;
using Quintet.Manager.Hosting;

namespace Quintet.Manager.Tests;

public class StartupSettingsTests
{
    private static IConfiguration Config(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder().AddInMemoryCollection(values.Select(v => new KeyValuePair<string, string?>(v.Key, v.Value))).Build();

    [Fact]
    public void Empty_configuration_gives_the_documented_defaults()
    {
        var settings = StartupSettings.Load(Config());

        Assert.Equal("quintet", settings.Cluster.Name);
        Assert.Equal("127.0.0.1", settings.Cluster.Host);
        Assert.Equal(4053, settings.Cluster.Port);
        Assert.Equal(5053, settings.Manager.GrpcPort);
        Assert.Equal("127.0.0.1", settings.GrpcHost);
        Assert.Equal(TimeSpan.FromMilliseconds(500), settings.Cluster.FailureDetector.HeartbeatInterval);
        Assert.Equal(TimeSpan.FromSeconds(2), settings.Cluster.FailureDetector.AcceptableHeartbeatPause);
        Assert.Equal(TimeSpan.FromSeconds(3), settings.Cluster.Downing.StableAfter);
    }

    [Fact]
    public void Values_from_configuration_are_bound()
    {
        var settings = StartupSettings.Load(Config(
            ("Quintet:Cluster:Seeds:0", "127.0.0.1:4054"),
            ("Quintet:Cluster:FailureDetector:Threshold", "12"),
            ("Quintet:Manager:GrpcHost", "localhost"),
            ("Quintet:Manager:NodeName", "web1")));

        Assert.Equal(["127.0.0.1:4054"], settings.Cluster.Seeds);
        Assert.Equal(12, settings.Cluster.FailureDetector.Threshold);
        Assert.Equal("localhost", settings.GrpcHost);
        Assert.Equal("web1", settings.NodeName);
    }

    /// <summary>A silence detector that would suspect a member at every late digest stops the manager at start, naming the setting.</summary>
    [Fact]
    public void The_group_failure_detector_settings_are_checked_against_each_other()
    {
        StartupSettings.Load(Config(("Quintet:Groups:Protocol:SuspectAfter", "00:00:01"), ("Quintet:Groups:Protocol:MaxSuspectAfter", "00:00:05")));

        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Groups:Protocol:SuspectAfter", "00:00:00.300"))));

        var failure = Assert.Single(error.Failures);
        Assert.StartsWith("Quintet:Groups:Protocol:SuspectAfter (00:00:00.3000000) must be at least twice DigestInterval", failure, StringComparison.Ordinal);
    }

    [Fact]
    public void The_durable_structures_snapshot_interval_is_read_and_checked()
    {
        Assert.Equal(100_000, StartupSettings.Load(Config()).SharedStructures.DurableSnapshotEveryCommands);
        Assert.Equal(5_000, StartupSettings.Load(Config(("Quintet:SharedStructures:DurableSnapshotEveryCommands", "5000"))).SharedStructures.DurableSnapshotEveryCommands);

        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:SharedStructures:DurableSnapshotEveryCommands", "0"))));

        var failure = Assert.Single(error.Failures);
        Assert.StartsWith("Quintet:SharedStructures:DurableSnapshotEveryCommands: 0 is not a number of commands", failure, StringComparison.Ordinal);
    }

    [Fact]
    public void The_shared_structure_limits_are_read_and_checked()
    {
        var defaults = StartupSettings.Load(Config()).SharedStructures.ToLimits();
        Assert.Equal((1_000_000, 256L * 1024 * 1024, 1024), (defaults.MaxEntries, defaults.MaxBytes, defaults.WatchBuffer));
        var set = StartupSettings.Load(Config(
            ("Quintet:SharedStructures:MaxEntries", "10"),
            ("Quintet:SharedStructures:MaxBytes", "4096"),
            ("Quintet:SharedStructures:WatchBuffer", "8"))).SharedStructures.ToLimits();
        Assert.Equal((10, 4096L, 8), (set.MaxEntries, set.MaxBytes, set.WatchBuffer));

        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:SharedStructures:MaxEntries", "0"),
            ("Quintet:SharedStructures:MaxBytes", "-1"),
            ("Quintet:SharedStructures:WatchBuffer", "0"))));
        Assert.Equal(
            ["Quintet:SharedStructures:MaxBytes: -1 is not a number of bytes", "Quintet:SharedStructures:MaxEntries: 0 is not a number of entries", "Quintet:SharedStructures:WatchBuffer: 0 is not a number of changes"],
            error.Failures.Select(f => f[..f.IndexOf(';', StringComparison.Ordinal)]).Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Misspelt_setting_is_reported_with_its_full_path()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Cluster:Sedes:0", "127.0.0.1:4054"),
            ("Quintet:Cluster:FailureDetector:Treshold", "12"),
            ("Quintet:Manager:GrpcPrt", "1"))));

        Assert.Equal(
            ["Quintet:Cluster:FailureDetector:Treshold", "Quintet:Cluster:Sedes", "Quintet:Manager:GrpcPrt"],
            error.Failures.Select(f => f[..f.IndexOf(": ", StringComparison.Ordinal)]).Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Unreadable_value_is_reported_with_its_full_path()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Cluster:FailureDetector:Threshold", "high"))));

        var failure = Assert.Single(error.Failures);
        Assert.Contains("'Quintet:Cluster:FailureDetector:Threshold'", failure, StringComparison.Ordinal);
        Assert.Contains("'high'", failure, StringComparison.Ordinal);
    }

    [Fact]
    public void Invalid_values_of_both_sections_are_reported_together()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Cluster:Seeds:0", "not a seed"),
            ("Quintet:Manager:GrpcPort", "70000"),
            ("Quintet:Manager:GrpcHost", "example.com"))));

        Assert.Collection(
            error.Failures,
            f => Assert.StartsWith("Quintet:Cluster:Seeds:0:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Manager:GrpcHost:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Manager:GrpcPort:", f, StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("Quintet:Cluster:Host", "web1.example", "web1.example")]
    [InlineData("Quintet:Cluster:Host", "10.0.0.11", "10.0.0.11")]
    [InlineData("Quintet:Manager:GrpcHost", "0.0.0.0", "0.0.0.0")]
    public void Without_certificates_a_manager_refuses_every_address_but_loopback(string setting, string host, string named)
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config((setting, host))));

        var failure = Assert.Single(error.Failures);
        Assert.StartsWith($"Quintet:Security: this manager would listen on {named}", failure, StringComparison.Ordinal);
        Assert.Contains("quintet certs create-ca", failure, StringComparison.Ordinal);
        Assert.False(StartupSettings.Load(Config((setting, host), ("Quintet:Security:AllowInsecure", "true"))).Security.Enabled);
        Assert.False(StartupSettings.Load(Config()).Security.Enabled);
    }

    [Fact]
    public void Bad_store_settings_are_reported_with_their_full_paths()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Store:Kind", "mysql"),
            ("Quintet:Store:Managers", "-3"),
            ("Quintet:Store:ReplicationTimeout", "00:00:00"))));

        Assert.Collection(
            error.Failures,
            f => Assert.Equal("Quintet:Store:Kind: 'mysql' is not a store kind; use 'replicated' (the default), 'local'.", f),
            f => Assert.StartsWith("Quintet:Store:Managers:", f, StringComparison.Ordinal),
            f => Assert.StartsWith("Quintet:Store:ReplicationTimeout:", f, StringComparison.Ordinal));
        Assert.Empty(StoreDefaults().Validate());
        Assert.Equal(("replicated", 0), (StoreDefaults().Kind, StoreDefaults().Managers));
    }

    private static Quintet.Manager.Persistence.StoreOptions StoreDefaults() => new();
}
