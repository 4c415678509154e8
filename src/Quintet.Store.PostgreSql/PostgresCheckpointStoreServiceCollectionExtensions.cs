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
}
