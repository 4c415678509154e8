namespace Quintet.Extensions;

/// <summary>
/// A run-time extension of the component manager: support for a new tool, or general component management, that the
/// manager loads on demand from its configuration (<c>Quintet:Extensions</c>) and starts through this interface. The
/// class needs a public parameterless constructor; it references only Quintet.Abstractions, and reaches the manager
/// through the <see cref="IManagerExtensionContext"/> it is started with (docs/extensions.md).
/// </summary>
public interface IManagerExtension
{
    /// <summary>
    /// Starts the extension, once, after the manager's own services have started and before its gRPC endpoint listens
    /// (so before the manager is ready or serves a call). An exception stops the manager's start with its message.
    /// </summary>
    /// <param name="context">What the manager exports to the extension; valid until <see cref="StopAsync"/> returns.</param>
    /// <param name="cancellationToken">Cancelled when the manager's start is abandoned.</param>
    ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken);

    /// <summary>
    /// Stops the extension at the manager's shutdown, extensions in the reverse order of their start. Observers it
    /// registered are removed by the manager before this is called. An exception is logged, and shutdown goes on.
    /// </summary>
    /// <param name="cancellationToken">Cancelled when the manager's shutdown timeout runs out.</param>
    ValueTask StopAsync(CancellationToken cancellationToken);
}
