using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Quintet.Persistence.PostgreSql;

namespace Quintet.Persistence;

/// <summary>Registers the PostgreSQL checkpoint store.</summary>
public static class PostgresCheckpointStoreServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="PostgresCheckpointStore"/> over <paramref name="connectionString"/> as the singleton
    /// <see cref="ICheckpointStore"/>. The container disposes it, which commits the writes still queued.
    /// </summary>
    /// <exception cref="ArgumentException">The connection string is missing or malformed.</exception>
    public static IServiceCollection AddPostgresCheckpointStore(this IServiceCollection services, string connectionString) =>
        services.AddPostgresCheckpointStore(new PostgresCheckpointStoreOptions { ConnectionString = connectionString });

    /// <summary>
    /// Registers <see cref="PostgresCheckpointStore"/> with <paramref name="options"/> as the singleton
    /// <see cref="ICheckpointStore"/>. The container disposes it, which commits the writes still queued.
    /// </summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the setting.</exception>
    public static IServiceCollection AddPostgresCheckpointStore(this IServiceCollection services, PostgresCheckpointStoreOptions options)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(options);
        var failures = options.Validate();
        if (failures.Count > 0)
        {
            throw new ArgumentException(string.Join(" ", failures), nameof(options));
        }

        services.AddSingleton(sp => new PostgresCheckpointStore(options, sp.GetRequiredService<ILogger<PostgresCheckpointStore>>()));
        services.AddSingleton<ICheckpointStore>(sp => sp.GetRequiredService<PostgresCheckpointStore>());
        return services;
    }

    /// <summary>
    /// Offers the PostgreSQL store as the store kind <c>postgresql</c> (<see cref="PostgresCheckpointStoreOptions.KindName"/>):
    /// a host that reads <c>Quintet:Store:Kind</c> from its registry (<see cref="CheckpointStoreKinds"/>) makes it when
    /// that setting chooses it, with the settings of <c>Quintet:Store:PostgreSql</c>, and checks those at startup.
    /// Isolated workers open the same database.
    /// </summary>
    public static IServiceCollection AddPostgreSqlCheckpointStore(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        return services.AddCheckpointStoreKind(new CheckpointStoreKind(
            PostgresCheckpointStoreOptions.KindName,
            sp => new PostgresCheckpointStore(Bind(sp.GetRequiredService<IConfiguration>()), sp.GetRequiredService<ILogger<PostgresCheckpointStore>>()))
        {
            SettingsType = typeof(PostgresCheckpointStoreOptions),
            Validate = Validate,
            SharedWithWorkers = true,
        });
    }

    private static PostgresCheckpointStoreOptions Bind(IConfiguration configuration) =>
        configuration.GetSection(PostgresCheckpointStoreOptions.SectionName).Get<PostgresCheckpointStoreOptions>() ?? new PostgresCheckpointStoreOptions();

    private static IEnumerable<string> Validate(IConfiguration configuration)
    {
        PostgresCheckpointStoreOptions options;
        try
        {
            options = Bind(configuration);
        }
        catch (InvalidOperationException e)
        {
            // The binder names the full path of the value it could not convert.
            return [e.InnerException is { } inner ? $"{e.Message} {inner.Message}" : e.Message];
        }

        return options.Validate();
    }
}
