namespace Quintet.Manager.Packages;

/// <summary>A QoS spec is not valid; <see cref="Exception.Message"/> lists every error, one a line, each prefixed with its field's path.</summary>
public sealed class QosSpecException : Exception
{
    /// <summary>Creates the exception for the errors found.</summary>
    public QosSpecException(IReadOnlyList<string> errors)
        : base(string.Join('\n', errors ?? []))
    {
        Errors = errors ?? [];
    }

    /// <summary>Creates the exception with no errors listed.</summary>
    public QosSpecException()
        : this([])
    {
    }

    /// <summary>Creates the exception for one error.</summary>
    public QosSpecException(string message)
        : this([message])
    {
    }

    /// <summary>Creates the exception for one error and its cause.</summary>
    public QosSpecException(string message, Exception innerException)
        : base(message, innerException)
    {
        Errors = [message];
    }

    /// <summary>Each error, prefixed with its field's path, for example <c>qos.replicas: must be 2 to 16 for primaryBackup, was 1</c>.</summary>
    public IReadOnlyList<string> Errors { get; }
}
