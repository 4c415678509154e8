using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;
using Quintet.Manager.Configuration;
using Quintet.Manager.Hosting;
using Quintet.Manager.Persistence;
using Quintet.Persistence;
using Quintet.Persistence.PostgreSql;
using Quintet.Tests.Postgres;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>
/// What the PostgreSQL store does beyond the common contract: a database shared by several managers, schema creation
/// that several of them may run at once, a clear error when the server is unreachable, and its settings.
/// </summary>
[Collection(PostgresServerGroup.Name)]
public sealed class PostgresCheckpointStoreTests(PostgresServerFixture server) : IAsyncLifetime
{
    private readonly List<PostgresCheckpointStore> _stores = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        foreach (var store in _stores)
        {
            await store.DisposeAsync();
        }
    }

    private PostgresCheckpointStore Store(string connectionString)
    {
        var store = new PostgresCheckpointStore(new PostgresCheckpointStoreOptions { ConnectionString = connectionString }, NullLogger<PostgresCheckpointStore>.Instance);
        _stores.Add(store);
        return store;
    }

    [Fact]
    public async Task Managers_starting_at_once_on_an_empty_database_create_the_schema_once_and_share_every_stream()
    {
        var database = await server.CreateDatabaseAsync();
        var managers = Enumerable.Range(0, 6).Select(_ => Store(database)).ToList();

        // Each one's first write creates the tables if they are missing, all at the same moment.
        var first = await Task.WhenAll(managers.Select((m, i) => m.Open($"Bank.Account/acct-{i}").AppendAsync(new byte[] { (byte)i })));

        Assert.All(first, p => Assert.Equal(1, p));
        for (var i = 0; i < managers.Count; i++)
        {
            // What one manager wrote, any other recovers and continues: the store is shared.
            var other = managers[(i + 1) % managers.Count].Open($"Bank.Account/acct-{i}");
            Assert.Equal([(byte)i], Assert.Single((await other.RecoverAsync()).Log).Data.ToArray());
            Assert.Equal(2, await other.AppendAsync(new byte[] { 9 }));
        }

        await using var connection = new NpgsqlConnection(database);
        await connection.OpenAsync();
        await using var tables = new NpgsqlCommand("SELECT COUNT(*) FROM pg_tables WHERE tablename LIKE 'quintet_checkpoints%'", connection);
        Assert.Equal(2L, await tables.ExecuteScalarAsync());
        await using var version = new NpgsqlCommand("SELECT COUNT(*), MAX(version) FROM quintet_checkpoints_schema", connection);
        await using var reader = await version.ExecuteReaderAsync();
        await reader.ReadAsync();
        Assert.Equal((1L, 1), (reader.GetInt64(0), reader.GetInt32(1)));
    }

    [Fact]
    public async Task It_describes_the_database_its_streams_and_this_managers_writes_without_the_password()
    {
        var database = await server.CreateDatabaseAsync();
        var store = Store(database);
        var empty = await store.DescribeAsync();
        Assert.Equal(("postgresql", store.Server, 0L, true), (empty.Kind, empty.Location, empty.Streams, empty.Healthy));
        Assert.Null(empty.LastWrite);

        await store.Open("Bank.Account/a").AppendAsync(new byte[] { 1 });
        await store.Open("Bank.Account/a").WriteCheckpointAsync(new byte[] { 2 });
        await store.Open("Bank.Account/b").AppendAsync(new byte[] { 3 });
        await Store(database).Open("Bank.Account/c").AppendAsync(new byte[] { 4 });
        var deleted = store.Open("Bank.Account/d");
        await deleted.AppendAsync(new byte[] { 5 });
        await deleted.DeleteAsync();

        var described = await store.DescribeAsync();
        Assert.True(described.Healthy, described.Problem);
        Assert.Null(described.Problem);

        // Every manager's streams: the database is shared; the writes are this store's own.
        Assert.Equal(3, described.Streams);
        Assert.Null(described.LiveBytes);
        Assert.True(described.StoredBytes > 0, $"stored {described.StoredBytes}");
        Assert.Equal(5, described.Writes);
        Assert.InRange(described.Commits, 1, 5);
        Assert.NotNull(described.LastWrite);
        Assert.Matches(@"^\d+", described.Details.First(d => d.Key == "server version").Value);
        Assert.Contains(described.Details, d => d.Key == "pool");
        Assert.DoesNotContain(new NpgsqlConnectionStringBuilder(database).Password ?? "no password", described.Location, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_unreachable_server_is_described_unhealthy_naming_the_server_but_not_the_password()
    {
        var store = Store("Host=127.0.0.1;Port=1;Username=quintet;Password=s3cret;Database=quintet;Timeout=5");

        var described = await store.DescribeAsync();

        Assert.False(described.Healthy);
        Assert.Null(described.Streams);
        Assert.Contains("127.0.0.1:1/quintet could not be reached", described.Problem, StringComparison.Ordinal);
        Assert.DoesNotContain("s3cret", described.Problem, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Tables_of_a_newer_schema_version_are_refused_with_the_versions()
    {
        var database = await server.CreateDatabaseAsync();
        await Store(database).Open("s").AppendAsync(new byte[] { 1 });
        await using (var connection = new NpgsqlConnection(database))
        {
            await connection.OpenAsync();
            await using var newer = new NpgsqlCommand("UPDATE quintet_checkpoints_schema SET version = 2", connection);
            await newer.ExecuteNonQueryAsync();
        }

        var e = await Assert.ThrowsAsync<CheckpointStoreException>(() => Store(database).Open("s").RecoverAsync());

        Assert.Contains("schema version 2, newer than this manager's 1", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_unreachable_server_fails_writes_and_reads_naming_the_stream_and_the_server_but_not_the_password()
    {
        // A loopback port nobody listens on: the connection is refused at once.
        var store = Store("Host=127.0.0.1;Port=1;Username=quintet;Password=s3cret;Database=quintet;Timeout=5");
        var log = store.Open("Bank.Account/acct-42");

        var write = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.AppendAsync(new byte[] { 1 }));
        var read = await Assert.ThrowsAsync<CheckpointStoreException>(() => log.RecoverAsync());

        foreach (var e in new[] { write, read })
        {
            Assert.Contains("'Bank.Account/acct-42'", e.Message, StringComparison.Ordinal);
            Assert.Contains("127.0.0.1:1/quintet", e.Message, StringComparison.Ordinal);
            Assert.DoesNotContain("s3cret", e.Message, StringComparison.Ordinal);
            Assert.Equal("Bank.Account/acct-42", e.Stream);
        }
    }

    [Fact]
    public void A_stream_name_with_a_NUL_character_is_refused_before_anything_is_sent() =>
        Assert.Contains("NUL", Assert.Throws<ArgumentException>(() => Store("Host=127.0.0.1;Port=1").Open("a\0b")).Message, StringComparison.Ordinal);

    [Theory]
    [InlineData(null, 1024, "Quintet:Store:PostgreSql:ConnectionString: is required")]
    [InlineData("Hots=db1", 1024, "Quintet:Store:PostgreSql:ConnectionString: is not a valid Npgsql connection string")]
    [InlineData("Database=quintet", 1024, "Quintet:Store:PostgreSql:ConnectionString: names no Host")]
    [InlineData("Host=db1", 0, "Quintet:Store:PostgreSql:MaxRecordBytes: must be from 1 to")]
    public void Invalid_options_are_refused_naming_the_setting(string? connectionString, int maxRecordBytes, string expected)
    {
        var options = new PostgresCheckpointStoreOptions { ConnectionString = connectionString, MaxRecordBytes = maxRecordBytes };

        Assert.Contains(expected, Assert.Single(options.Validate()), StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => new PostgresCheckpointStore(options, NullLogger<PostgresCheckpointStore>.Instance));
    }

    [Fact]
    public void The_manager_reads_the_store_kind_and_the_connection_string_from_configuration()
    {
        var configuration = Config(
            ("Quintet:Store:Kind", "PostgreSQL"),
            ("Quintet:Store:PostgreSql:ConnectionString", "Host=db1;Database=quintet"),
            ("Quintet:Store:PostgreSql:MaxRecordBytes", "1048576"));
        var services = new ServiceCollection().AddLogging().AddSingleton(configuration);
        var kinds = Kinds(services);
        var settings = StartupSettings.Load(configuration, kinds);

        Assert.True(settings.Store.IsKind(PostgresCheckpointStoreOptions.KindName));
        Assert.True(kinds.TryGet(settings.Store.Kind, out var kind));
        Assert.True(kind.SharedWithWorkers);
        using var provider = services.BuildServiceProvider();
        var store = Assert.IsType<PostgresCheckpointStore>(kind.Create(provider));
        Assert.Equal("db1:5432/quintet", store.Server);
        Assert.Equal(1048576, store.MaxRecordBytes);
        Assert.Equal("Host=db1;Database=quintet", settings.Store.ToEnvironment(configuration)["Quintet__Store__PostgreSql__ConnectionString"]);
        Assert.False(StartupSettings.Load(Config(), kinds).Store.IsKind(PostgresCheckpointStoreOptions.KindName));
        store.Dispose();
    }

    [Fact]
    public void A_bad_store_configuration_stops_the_manager_naming_each_setting()
    {
        var kinds = Kinds(new ServiceCollection());
        var missing = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(("Quintet:Store:Kind", "postgresql")), kinds));
        var unknownKind = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(("Quintet:Store:Kind", "postgres")), kinds));
        var misspelt = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(
            ("Quintet:Store:Kind", "postgresql"),
            ("Quintet:Store:PostgreSql:ConectionString", "Host=db1")), kinds));

        Assert.Contains("Quintet:Store:PostgreSql:ConnectionString: is required", missing.Message, StringComparison.Ordinal);
        Assert.Contains("Quintet:Store:Kind: 'postgres' is not a store kind; use 'replicated' (the default), 'local', 'postgresql'.", unknownKind.Message, StringComparison.Ordinal);
        Assert.Contains("Quintet:Store:PostgreSql:ConectionString: is not a known setting", misspelt.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_manager_without_the_plug_in_says_which_package_adds_the_postgresql_kind()
    {
        var error = Assert.Throws<ConfigurationErrorException>(() => StartupSettings.Load(Config(("Quintet:Store:Kind", "PostgreSql"))));

        var failure = Assert.Single(error.Failures);
        Assert.StartsWith("Quintet:Store:Kind: 'PostgreSql' is not a store kind this manager offers; use 'replicated' (the default), 'local'", failure, StringComparison.Ordinal);
        Assert.Contains("Quintet.Store.PostgreSql package", failure, StringComparison.Ordinal);
        Assert.Contains("AddPostgreSqlCheckpointStore()", failure, StringComparison.Ordinal);
    }

    // The kinds the quintet-manager executable offers: the manager's own, then PostgreSQL's.
    private static CheckpointStoreKinds Kinds(IServiceCollection services)
    {
        CheckpointStoreServiceCollectionExtensions.AddBuiltInKinds(services.GetCheckpointStoreKinds());
        services.AddPostgreSqlCheckpointStore();
        return services.GetCheckpointStoreKinds();
    }

    private static IConfiguration Config(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder().AddInMemoryCollection(values.Select(v => new KeyValuePair<string, string?>(v.Key, v.Value))).Build();
}
