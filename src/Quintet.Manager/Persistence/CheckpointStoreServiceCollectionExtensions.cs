using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;
using Quintet.Manager.Hosting;
using Quintet.Persistence;

namespace Quintet.Manager.Persistence;

/// <summary>Registers the manager's local checkpoint store.</summary>
internal static partial class CheckpointStoreServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="LocalCheckpointStore"/> as the singleton <see cref="ICheckpointStore"/>, its database in
    /// <see cref="ManagerOptions.DataDirectory"/> (by default <c>quintet/&lt;node name&gt;</c> under the temp folder,
    /// as for packages). The container disposes it, which commits the writes still queued.
    /// </summary>
    public static IServiceCollection AddLocalCheckpointStore(this IServiceCollection services)
    {
        services.AddSingleton(sp =>
        {
            var options = sp.GetRequiredService<IOptions<ManagerOptions>>().Value;
            var logger = sp.GetRequiredService<ILogger<LocalCheckpointStore>>();
            var directory = options.DataDirectoryFor(sp.GetRequiredService<ManagerIdentity>().NodeName);
            if (options.DataDirectory is null)
            {
                LogTemporaryDirectory(logger, directory);
            }

            return new LocalCheckpointStore(directory, logger);
        });
        services.AddSingleton<ICheckpointStore>(sp => sp.GetRequiredService<LocalCheckpointStore>());
        return services;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Quintet:Manager:DataDirectory is not set: checkpoints are kept in {Directory}, a temp folder the system may clear")]
    private static partial void LogTemporaryDirectory(ILogger logger, string directory);
}
