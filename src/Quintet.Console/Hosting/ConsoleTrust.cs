using Microsoft.Extensions.Options;
using Quintet.Security;

namespace Quintet.Console.Hosting;

/// <summary>The cluster's CAs, read once at start from <see cref="ConsoleOptions.CaFile"/>: only managers with a certificate from them are called.</summary>
public sealed class ConsoleTrust(IOptions<ConsoleOptions> options)
{
    private readonly Lazy<ClusterTrust?> _trust = new(() => options.Value.CaFile is { } file ? ClusterTrust.Load(file) : null);

    /// <summary>The CAs; null to let the platform check the managers' certificates.</summary>
    public ClusterTrust? Trust => _trust.Value;
}
