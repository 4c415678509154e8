using Quintet.Components;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Tests;

/// <summary>QoS specs: JSON and YAML read alike, defaults fill the gaps, and every broken rule is named by its field.</summary>
public sealed class QosSpecReaderTests(ITestOutputHelper output)
{
    private static readonly QosSpec Expected = new()
    {
        Replication = ReplicationStyle.PrimaryBackup,
        Replicas = 3,
        Placement = PlacementPolicy.Affinity,
        AffinityTo = "Bank.Ledger",
        FailoverBudget = TimeSpan.FromMilliseconds(500),
        RetireAfterIdle = TimeSpan.FromSeconds(30),
        Isolation = IsolationMode.Process,
        LoadBalancing = LoadBalancingPolicy.PrimaryOnly,
        Debug = true,
        Instancing = InstancingStyle.Fresh,
    };

    private static string Refused(string text, string fileName = "qos.yaml") =>
        Assert.Throws<QosSpecException>(() => QosSpecReader.Parse(text, fileName)).Message;

    [Fact]
    public void Json_and_yaml_read_to_the_same_spec()
    {
        const string Yaml = """
            replication: primaryBackup
            replicas: 3
            placement: affinity
            affinityTo: Bank.Ledger
            failoverBudget: 500ms
            retireAfterIdle: 30s
            isolation: process
            loadBalancing: primaryOnly
            debug: true
            instancing: fresh
            """;
        const string Json = """
            {
              "replication": "primaryBackup", "replicas": 3, "placement": "affinity", "affinityTo": "Bank.Ledger",
              "failoverBudget": "500ms", "retireAfterIdle": "30s", "isolation": "process", "loadBalancing": "primaryOnly",
              "debug": true, "instancing": "fresh"
            }
            """;

        Assert.Equal(Expected, QosSpecReader.Parse(Yaml, "qos.yaml"));
        Assert.Equal(Expected, QosSpecReader.Parse(Json, "qos.json"));
        Assert.Equal(Expected, QosSpecReader.Parse(Yaml, "qos.yml"));
    }

    [Fact]
    public void Missing_fields_take_their_defaults()
    {
        var spec = QosSpecReader.Parse("{}", "qos.json");

        Assert.Equal(QosSpec.Default, spec);
        Assert.Equal(QosSpec.Default, QosSpecReader.Parse("", "qos.yaml"));
        Assert.Equal(ReplicationStyle.None, spec.Replication);
        Assert.Equal(1, spec.Replicas);
        Assert.Equal(PlacementPolicy.Spread, spec.Placement);
        Assert.Null(spec.AffinityTo);
        Assert.Equal(TimeSpan.FromSeconds(5), spec.FailoverBudget);
        Assert.Null(spec.RetireAfterIdle);
        Assert.Equal(IsolationMode.Shared, spec.Isolation);
        Assert.Equal(LoadBalancingPolicy.PrimaryOnly, spec.LoadBalancing);
        Assert.False(spec.Debug);
        Assert.Equal(InstancingStyle.Keyed, spec.Instancing);
        Assert.Empty(QosSpec.Default.Validate());
    }

    [Theory]
    [InlineData("primaryBackup")]
    [InlineData("PrimaryBackup")]
    [InlineData("primary-backup")]
    [InlineData("PRIMARY_BACKUP")]
    public void Enum_values_are_case_insensitive_and_may_use_dashes(string value) =>
        Assert.Equal(ReplicationStyle.PrimaryBackup, QosSpecReader.Parse($"replication: {value}\nreplicas: 2", "qos.yaml").Replication);

    [Theory]
    [InlineData("1500ms", 1500 * TimeSpan.TicksPerMillisecond)]
    [InlineData("5s", 5 * TimeSpan.TicksPerSecond)]
    [InlineData("1.5s", 15 * TimeSpan.TicksPerSecond / 10)]
    [InlineData("10m", 10 * TimeSpan.TicksPerMinute)]
    [InlineData("1h", TimeSpan.TicksPerHour)]
    [InlineData("2H", 2 * TimeSpan.TicksPerHour)]
    [InlineData("00:05:00", 5 * TimeSpan.TicksPerMinute)]
    [InlineData("00:00:01.5", 15 * TimeSpan.TicksPerSecond / 10)]
    [InlineData("PT5M", 5 * TimeSpan.TicksPerMinute)]
    [InlineData("PT1H30M", 90 * TimeSpan.TicksPerMinute)]
    public void Durations_are_read_in_every_format(string text, long ticks)
    {
        Assert.True(QosSpecReader.TryParseDuration(text, out var value));
        Assert.Equal(ticks, value.Ticks);
        Assert.Equal(TimeSpan.FromTicks(ticks), QosSpecReader.Parse($"retireAfterIdle: \"{text}\"", "qos.yaml").RetireAfterIdle);
    }

    [Theory]
    [InlineData("")]
    [InlineData("5")]
    [InlineData("s")]
    [InlineData("-5s")]
    [InlineData("5 days")]
    [InlineData("5d")]
    [InlineData("P5X")]
    [InlineData("99999999999999h")]
    public void Bad_durations_are_refused(string text) => Assert.False(QosSpecReader.TryParseDuration(text, out _));

    [Fact]
    public void A_duration_without_a_unit_is_refused_by_name() =>
        Assert.Equal("qos.failoverBudget: must be a duration such as 500ms, 5s, 10m, 1h or 00:05:00, was 5", Refused("""{"failoverBudget": 5}""", "qos.json"));

    [Fact]
    public void Null_means_never_retire() =>
        Assert.Null(QosSpecReader.Parse("retireAfterIdle: null", "qos.yaml").RetireAfterIdle);

    [Theory]
    [InlineData("replication: primaryBackup", "qos.replicas: must be 2 to 16 for primaryBackup, was 1")]
    [InlineData("replication: active\nreplicas: 17", "qos.replicas: must be 2 to 16 for active, was 17")]
    [InlineData("replicas: 2", "qos.replicas: must be 1 when replication is none, was 2")]
    [InlineData("placement: affinity", "qos.affinityTo: required for affinity placement; name the manager node or the component class to co-locate with")]
    [InlineData("affinityTo: node-1", "qos.affinityTo: only allowed with affinity placement, placement is spread")]
    [InlineData("failoverBudget: 50ms", "qos.failoverBudget: must be 100ms to 10m, was 50ms")]
    [InlineData("failoverBudget: 11m", "qos.failoverBudget: must be 100ms to 10m, was 11m")]
    [InlineData("retireAfterIdle: 500ms", "qos.retireAfterIdle: must be at least 1s, was 500ms")]
    [InlineData("replication: active\nreplicas: 3\nretireAfterIdle: 30s", "qos.retireAfterIdle: not allowed for active replication")]
    [InlineData("replication: primaryBackup\nreplicas: 2\nloadBalancing: roundRobin", "qos.loadBalancing: roundRobin needs active replication (only active replicas can all serve calls), replication is primaryBackup; use primaryOnly")]
    [InlineData("loadBalancing: leastLoaded", "qos.loadBalancing: leastLoaded needs active replication (only active replicas can all serve calls), replication is none; use primaryOnly")]
    [InlineData("replication: mirrored", "qos.replication: must be one of none, primaryBackup, active, was mirrored")]
    [InlineData("replicas: two", "qos.replicas: must be a whole number, was two")]
    [InlineData("replicas: \"2\"", "qos.replicas: must be a whole number, was \"2\"")]
    [InlineData("debug: yes", "qos.debug: must be true or false, was yes")]
    [InlineData("isolation: [process]", "qos.isolation: must be one of shared, process, was a list")]
    public void Each_rule_names_its_field(string yaml, string error) => Assert.Equal(error, Refused(yaml));

    [Fact]
    public void Active_replication_with_balancing_is_valid()
    {
        var spec = QosSpecReader.Parse("""{"replication":"active","replicas":4,"loadBalancing":"round-robin"}""", "qos.json");
        Assert.Equal(new QosSpec { Replication = ReplicationStyle.Active, Replicas = 4, LoadBalancing = LoadBalancingPolicy.RoundRobin }, spec);
    }

    [Fact]
    public void Every_error_is_reported_at_once()
    {
        var e = Assert.Throws<QosSpecException>(() => QosSpecReader.Parse("""
            replication: active
            replicas: 1
            retireAfterIdle: 30s
            failoverBudget: forever
            debug: 3
            """, "qos.yaml"));

        Assert.Equal(
            [
                "qos.failoverBudget: must be a duration such as 500ms, 5s, 10m, 1h or 00:05:00, was forever",
                "qos.debug: must be true or false, was 3",
                "qos.replicas: must be 2 to 16 for active, was 1",
                "qos.retireAfterIdle: not allowed for active replication",
            ],
            e.Errors);
        Assert.Equal(string.Join('\n', e.Errors), e.Message);
    }

    [Fact]
    public void A_field_that_cannot_be_read_does_not_also_fail_the_rules_that_depend_on_it() =>
        Assert.Equal("qos.replication: must be one of none, primaryBackup, active, was primary", Refused("replication: primary\nreplicas: 3"));

    [Fact]
    public void An_unknown_field_is_refused() =>
        Assert.Equal(
            "qos.replica: unknown field; the fields are replication, replicas, placement, affinityTo, failoverBudget, retireAfterIdle, isolation, loadBalancing, debug, instancing",
            Refused("""{"replica": 2}""", "qos.json"));

    [Fact]
    public void A_near_miss_field_gets_a_hint() =>
        Assert.Equal("qos.retire_after_idle: unknown field; did you mean retireAfterIdle?", Refused("retire_after_idle: 30s"));

    [Fact]
    public void A_field_given_twice_is_refused() =>
        Assert.Equal("qos.debug: given twice", Refused("""{"debug": true, "debug": false}""", "qos.json"));

    [Theory]
    [InlineData("replicas: [1", "qos.yaml", "qos: not valid YAML at line 2, column 1: ")]
    [InlineData("{\"replicas\": ", "qos.json", "qos: not valid JSON")]
    [InlineData("- replicas: 2", "qos.yaml", "qos: must be a mapping of QoS fields")]
    public void Text_that_is_not_a_spec_is_refused(string text, string fileName, string error)
    {
        var message = Refused(text, fileName);
        output.WriteLine(message);
        Assert.StartsWith(error, message, StringComparison.Ordinal);
    }

    [Fact]
    public void An_unknown_extension_is_refused() =>
        Assert.Equal("qos.toml: a QoS spec file ends in .json, .yaml or .yml", Refused("replicas = 1", "qos.toml"));

    [Theory]
    [InlineData("qos.yaml")]
    [InlineData("qos.json")]
    public void A_formatted_spec_reads_back_equal(string fileName)
    {
        var format = QosSpecReader.FormatOf(fileName);
        Assert.Equal(Expected, QosSpecReader.Parse(QosSpecReader.Format(Expected, format), format, "qos"));
        Assert.Equal(QosSpec.Default, QosSpecReader.Parse(QosSpecReader.Format(QosSpec.Default, format), format, "qos"));
        var odd = QosSpec.Default with { FailoverBudget = TimeSpan.FromTicks(1_234_567), AffinityTo = null };
        Assert.Equal(odd, QosSpecReader.Parse(QosSpecReader.Format(odd, format), format, "qos"));
    }

    [Fact]
    public void A_spec_is_written_with_spec_file_names()
    {
        var yaml = QosSpecReader.Format(Expected);

        Assert.Contains("replication: primaryBackup\n", yaml, StringComparison.Ordinal);
        Assert.Contains("failoverBudget: 500ms\n", yaml, StringComparison.Ordinal);
        Assert.Contains("\"retireAfterIdle\": \"30s\"", QosSpecReader.Format(Expected, QosSpecFormat.Json), StringComparison.Ordinal);
    }

    [Fact]
    public void A_package_file_maps_classes_to_specs()
    {
        var specs = QosSpecReader.ParseClasses("""
            Bank.Account:
              replication: primaryBackup
              replicas: 2
              retireAfterIdle: 30s
            Bank.Ledger:
              replication: active
              replicas: 3
              loadBalancing: leastLoaded
              placement: affinity
              affinityTo: Bank.Account
            """, "quintet-qos.yaml", ["Bank.Account", "Bank.Ledger", "Bank.Audit"]);

        Assert.Equal(["Bank.Account", "Bank.Ledger"], specs.Keys.Order());
        Assert.Equal(new QosSpec { Replication = ReplicationStyle.PrimaryBackup, Replicas = 2, RetireAfterIdle = TimeSpan.FromSeconds(30) }, specs["Bank.Account"]);
        Assert.Equal(
            new QosSpec { Replication = ReplicationStyle.Active, Replicas = 3, LoadBalancing = LoadBalancingPolicy.LeastLoaded, Placement = PlacementPolicy.Affinity, AffinityTo = "Bank.Account" },
            specs["Bank.Ledger"]);
    }

    [Fact]
    public void A_package_file_names_each_class_in_its_errors()
    {
        var e = Assert.Throws<QosSpecException>(() => QosSpecReader.ParseClasses("""
            {
              "Bank.Account": { "replication": "active", "replicas": 3, "retireAfterIdle": "30s" },
              "Bank.Acount": { },
              "Bank.Ledger": 3
            }
            """, "quintet-qos.json", ["Bank.Account", "Bank.Ledger"]));

        Assert.Equal(
            [
                "Bank.Account.retireAfterIdle: not allowed for active replication",
                "Bank.Acount: not a component class of this package; its classes are Bank.Account, Bank.Ledger",
                "Bank.Ledger: must be a mapping of QoS fields (replication, replicas, placement, affinityTo, failoverBudget, retireAfterIdle, isolation, loadBalancing, debug, instancing), was 3",
            ],
            e.Errors);
    }
}
