namespace Quintet.Manager.Hosting;

/// <summary>
/// The front door through which a host adds plug-ins to a manager (and to its isolated workers) before it starts: store
/// kinds today, with <see cref="Quintet.Persistence.CheckpointStoreKindsServiceCollectionExtensions.AddCheckpointStoreKind(IServiceCollection, Quintet.Persistence.CheckpointStoreKind)"/>
/// or a plug-in's own extension (<c>Services.AddPostgreSqlCheckpointStore()</c>).
/// </summary>
public interface IQuintetManagerBuilder
{
    /// <summary>The host's services, where plug-ins register.</summary>
    IServiceCollection Services { get; }

    /// <summary>The host's configuration, for a plug-in that reads its settings at registration.</summary>
    IConfiguration Configuration { get; }
}

/// <summary>The builder handed to the configure action of <see cref="ManagerHostingExtensions.UseQuintetManager"/>.</summary>
internal sealed record QuintetManagerBuilder(IServiceCollection Services, IConfiguration Configuration) : IQuintetManagerBuilder;
