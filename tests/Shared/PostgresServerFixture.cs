using System.Diagnostics;
using System.Text;
using Npgsql;

namespace Quintet.Tests.Postgres;

/// <summary>
/// A real PostgreSQL server for the tests of the PostgreSQL checkpoint store. <c>.ci/run</c> starts one with
/// <c>scripts/postgres-for-tests.sh</c> and passes its connection string in <c>QUINTET_TEST_POSTGRES</c>; without that
/// variable (a plain <c>dotnet test</c>) the fixture runs the script itself, on a data folder of its own, and stops that
/// server when its tests are done. Each test gets a database of its own, dropped afterwards, so that concurrent test
/// runs sharing one server never see each other's rows. If no server can be had, every test using it fails with the
/// script's reason: a PostgreSQL test never passes without PostgreSQL.
/// </summary>
public sealed class PostgresServerFixture : IAsyncLifetime
{
    /// <summary>The environment variable that hands the tests a running server's connection string.</summary>
    public const string Variable = "QUINTET_TEST_POSTGRES";

    private static readonly TimeSpan ScriptTimeout = TimeSpan.FromMinutes(8);

    private readonly List<string> _databases = [];
    private string? _dataDirectory;
    private string? _adminConnectionString;
    private string? _unavailable;

    /// <summary>Why there is no server, or null when there is one.</summary>
    public string? Unavailable => _unavailable;

    /// <summary>The server's connection string (its <c>postgres</c> database).</summary>
    public string AdminConnectionString => _adminConnectionString ?? throw new InvalidOperationException(
        $"No PostgreSQL server for the tests: {_unavailable}");

    public async Task InitializeAsync()
    {
        var given = Environment.GetEnvironmentVariable(Variable);
        if (!string.IsNullOrWhiteSpace(given))
        {
            _adminConnectionString = given;
            return;
        }

        var script = FindScript();
        if (script is null)
        {
            _unavailable = $"{Variable} is not set and scripts/postgres-for-tests.sh was not found above {AppContext.BaseDirectory}.";
            return;
        }

        _dataDirectory = Path.Combine(Path.GetTempPath(), $"quintet-postgres-{Environment.ProcessId}-{Guid.NewGuid():N}"[..40]);
        var (code, output, errors) = await RunScriptAsync(script, "start", _dataDirectory);
        var last = output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).LastOrDefault();
        if (code != 0 || last is null || !last.StartsWith("Host=", StringComparison.Ordinal))
        {
            _unavailable = $"{Variable} is not set and '{script} start {_dataDirectory}' failed (exit code {code}): {errors.Trim()}";
            return;
        }

        _adminConnectionString = last;
    }

    /// <summary>A new, empty database on the server, dropped when the fixture is disposed; its connection string.</summary>
    public async Task<string> CreateDatabaseAsync()
    {
        var name = $"quintet_test_{Guid.NewGuid():N}";
        await using (var connection = new NpgsqlConnection(AdminConnectionString))
        {
            await connection.OpenAsync();
            await using var create = new NpgsqlCommand($"CREATE DATABASE {name}", connection);
            await create.ExecuteNonQueryAsync();
        }

        lock (_databases)
        {
            _databases.Add(name);
        }

        return new NpgsqlConnectionStringBuilder(AdminConnectionString) { Database = name }.ToString();
    }

    public async Task DisposeAsync()
    {
        if (_adminConnectionString is not null && _databases.Count > 0)
        {
            NpgsqlConnection.ClearAllPools();
            try
            {
                await using var connection = new NpgsqlConnection(AdminConnectionString);
                await connection.OpenAsync();
                foreach (var name in _databases)
                {
                    await using var drop = new NpgsqlCommand($"DROP DATABASE IF EXISTS {name} WITH (FORCE)", connection);
                    await drop.ExecuteNonQueryAsync();
                }
            }
            catch (NpgsqlException)
            {
                // A server that is gone has dropped everything with it.
            }
        }

        if (_dataDirectory is not null && FindScript() is { } script)
        {
            // Only the server this fixture started, by its own data folder: a shared one belongs to whoever started it.
            await RunScriptAsync(script, "stop", _dataDirectory);
            try
            {
                Directory.Delete(_dataDirectory, recursive: true);
            }
            catch (IOException)
            {
            }
            catch (UnauthorizedAccessException)
            {
            }
        }
    }

    private static string? FindScript()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            var candidate = Path.Combine(directory.FullName, "scripts", "postgres-for-tests.sh");
            if (File.Exists(candidate))
            {
                return candidate;
            }
        }

        return null;
    }

    private static async Task<(int Code, string Output, string Errors)> RunScriptAsync(string script, params string[] arguments)
    {
        var info = new ProcessStartInfo("bash") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        info.ArgumentList.Add(script);
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        using var process = Process.Start(info) ?? throw new InvalidOperationException("bash did not start.");
        var output = new StringBuilder();
        var errors = new StringBuilder();
        var reading = Task.WhenAll(
            Task.Run(async () => output.Append(await process.StandardOutput.ReadToEndAsync())),
            Task.Run(async () => errors.Append(await process.StandardError.ReadToEndAsync())));
        using var timeout = new CancellationTokenSource(ScriptTimeout);
        try
        {
            await process.WaitForExitAsync(timeout.Token);
            await reading;
        }
        catch (OperationCanceledException)
        {
            // Only the script this fixture started, by its pid.
            process.Kill(entireProcessTree: true);
            return (-1, output.ToString(), $"the script did not finish within {ScriptTimeout.TotalMinutes:0} minutes. {errors}");
        }

        return (process.ExitCode, output.ToString(), errors.ToString());
    }
}
