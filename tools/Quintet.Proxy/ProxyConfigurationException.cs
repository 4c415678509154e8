namespace Quintet.Proxy;

/// <summary>The proxy's configuration is wrong: each failure names the setting and says what to change. Exit code 2.</summary>
public sealed class ProxyConfigurationException(IReadOnlyList<string> failures)
    : Exception($"The proxy's configuration is not valid: {string.Join(" ", failures)}")
{
    /// <summary>What is wrong, one setting each.</summary>
    public IReadOnlyList<string> Failures { get; } = failures;
}
