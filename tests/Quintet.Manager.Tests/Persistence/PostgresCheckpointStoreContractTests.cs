using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;
using Quintet.Persistence;
using Quintet.Persistence.PostgreSql;
using Quintet.Tests.Persistence;
using Quintet.Tests.Postgres;

namespace Quintet.Manager.Tests.Persistence;

/// <summary>The PostgreSQL tests share one server (see <see cref="PostgresServerFixture"/>).</summary>
[CollectionDefinition(Name)]
public sealed class PostgresServerGroup : ICollectionFixture<PostgresServerFixture>
{
    public const string Name = "PostgreSQL";
}

/// <summary>The checkpoint store contract, held against the PostgreSQL store on a real server, a database per test.</summary>
[Collection(PostgresServerGroup.Name)]
public sealed class PostgresCheckpointStoreContractTests(PostgresServerFixture server, ITestOutputHelper output) : CheckpointStoreContract(output)
{
    private string? _connectionString;

    private string ConnectionString => _connectionString ?? throw new InvalidOperationException("The test's database was not created.");

    protected override int DefaultMaxRecordBytes => new PostgresCheckpointStoreOptions().MaxRecordBytes;

    protected override int MaxStreamLength => PostgresCheckpointStore.MaxStreamLength;

    public override async Task InitializeAsync() => _connectionString = await server.CreateDatabaseAsync();

    // The fixture drops the test's database when the collection is done.
    protected override Task DeleteStorageAsync() => Task.CompletedTask;

    protected override ICheckpointStore CreateStore(int? maxRecordBytes) => new PostgresCheckpointStore(
        new PostgresCheckpointStoreOptions
        {
            ConnectionString = ConnectionString,
            MaxRecordBytes = maxRecordBytes ?? PostgresCheckpointStoreOptions.DefaultMaxRecordBytes,
        },
        NullLogger<PostgresCheckpointStore>.Instance);

    protected override ValueTask CloseStoreAsync(ICheckpointStore store) => ((PostgresCheckpointStore)store).DisposeAsync();

    protected override long Transactions(ICheckpointStore store) => ((PostgresCheckpointStore)store).Transactions;

    // A store that never wrote has not created its table yet: no table, no rows.
    protected override async Task<long> RowCountAsync(string stream) =>
        await ScalarAsync("SELECT to_regclass('quintet_checkpoints') IS NOT NULL") is true
            ? (long)(await ScalarAsync("SELECT COUNT(*) FROM quintet_checkpoints WHERE stream = $1", stream))!
            : 0;

    protected override async Task FlipStoredBitAsync(string stream, long position) =>
        Assert.Equal(1, await ExecuteAsync(
            "UPDATE quintet_checkpoints SET data = set_byte(data, 0, get_byte(data, 0) # 1) WHERE stream = $1 AND position = $2", stream, position));

    protected override async Task RemoveRowAsync(string stream, long position) =>
        Assert.Equal(1, await ExecuteAsync("DELETE FROM quintet_checkpoints WHERE stream = $1 AND position = $2", stream, position));

    private async Task<object?> ScalarAsync(string sql, params object[] parameters)
    {
        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var command = Command(sql, connection, parameters);
        return await command.ExecuteScalarAsync();
    }

    private async Task<int> ExecuteAsync(string sql, params object[] parameters)
    {
        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var command = Command(sql, connection, parameters);
        return await command.ExecuteNonQueryAsync();
    }

    private static NpgsqlCommand Command(string sql, NpgsqlConnection connection, object[] parameters)
    {
        var command = new NpgsqlCommand(sql, connection);
        foreach (var parameter in parameters)
        {
            command.Parameters.Add(new NpgsqlParameter { Value = parameter });
        }

        return command;
    }
}
