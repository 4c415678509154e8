namespace Quintet.Core.Cluster;

/// <summary>The cluster transport could not start; the message names the setting to change.</summary>
public sealed class ClusterStartException : Exception
{
    /// <summary>Creates the exception.</summary>
    public ClusterStartException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public ClusterStartException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and its cause.</summary>
    public ClusterStartException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
