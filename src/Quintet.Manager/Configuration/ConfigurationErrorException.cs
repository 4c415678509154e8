
namespace Quintet.Manager.Configuration;

/// <summary>The manager's configuration is invalid; each failure names the setting to fix.</summary>
public sealed class ConfigurationErrorException : Exception
{
    /// <summary>Creates the exception with no failures listed.</summary>
    public ConfigurationErrorException()
        : this([])
    {
    }

    /// <summary>Creates the exception for one failure.</summary>
    public ConfigurationErrorException(string message)
        : this([message])
    {
    }

    /// <summary>Creates the exception for one failure with its cause.</summary>
    public ConfigurationErrorException(string message, Exception innerException)
        : base(message, innerException) => Failures = [message];

    /// <summary>Creates the exception for several failures.</summary>
    public ConfigurationErrorException(IReadOnlyList<string> failures)
        : base(string.Join(Environment.NewLine, failures)) => Failures = failures;

    /// <summary>Each failure, starting with the setting's full name (for example <c>Quintet:Cluster:Port</c>).</summary>
    public IReadOnlyList<string> Failures { get; }
}
