using Quintet.Extensions;

namespace Quintet.Manager.Tests.Extensions;

/// <summary>Does nothing, well.</summary>
public sealed class QuietExtension : IManagerExtension
{
    public ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public ValueTask StopAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;
}

/// <summary>Needs an argument the manager cannot give.</summary>
public sealed class NeedsArgumentExtension(string connectionString) : IManagerExtension
{
    public string ConnectionString { get; } = connectionString;

    public ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public ValueTask StopAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;
}

/// <summary>Throws in its constructor.</summary>
public sealed class ThrowingConstructorExtension : IManagerExtension
{
    public ThrowingConstructorExtension() => throw new InvalidOperationException("no licence file found");

    public ValueTask StartAsync(IManagerExtensionContext context, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public ValueTask StopAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;
}

/// <summary>A public class that is not an extension.</summary>
public sealed class NotAnExtension
{
    public override string ToString() => nameof(NotAnExtension);
}
