using Microsoft.Extensions.DependencyInjection;

namespace Quintet.Persistence;

/// <summary>Adds checkpoint store kinds to a host's services: the front door every store plug-in goes through.</summary>
public static class CheckpointStoreKindsServiceCollectionExtensions
{
    /// <summary>
    /// The registry of store kinds in <paramref name="services"/>, added as a singleton on first use; a host reads it
    /// once every plug-in has added its kind, before the container is built, to check <c>Quintet:Store:Kind</c> at
    /// startup.
    /// </summary>
    public static CheckpointStoreKinds GetCheckpointStoreKinds(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        foreach (var descriptor in services)
        {
            if (descriptor.ServiceType == typeof(CheckpointStoreKinds) && !descriptor.IsKeyedService && descriptor.ImplementationInstance is CheckpointStoreKinds kinds)
            {
                return kinds;
            }
        }

        var added = new CheckpointStoreKinds();
        services.AddSingleton(added);
        return added;
    }

    /// <summary>Adds <paramref name="kind"/> to the host's store kinds, in place of a kind of the same name.</summary>
    public static IServiceCollection AddCheckpointStoreKind(this IServiceCollection services, CheckpointStoreKind kind)
    {
        services.GetCheckpointStoreKinds().Add(kind);
        return services;
    }

    /// <summary>Adds the store kind <paramref name="name"/>, whose store <paramref name="create"/> makes, to the host's store kinds.</summary>
    public static IServiceCollection AddCheckpointStoreKind(this IServiceCollection services, string name, Func<IServiceProvider, ICheckpointStore> create) =>
        services.AddCheckpointStoreKind(new CheckpointStoreKind(name, create));
}
