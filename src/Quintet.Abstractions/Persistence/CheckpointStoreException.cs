namespace Quintet.Persistence;

/// <summary>
/// A checkpoint store refused a write over its limits, or found stored data corrupt (a checksum mismatch or a missing
/// position). The message names the stream and, where there is one, the position.
/// </summary>
public sealed class CheckpointStoreException : Exception
{
    /// <summary>Creates the exception.</summary>
    public CheckpointStoreException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public CheckpointStoreException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and its cause.</summary>
    public CheckpointStoreException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates the exception for one stream and, where there is one, a position.</summary>
    /// <param name="message">What went wrong, naming the stream and the position.</param>
    /// <param name="stream">The stream concerned.</param>
    /// <param name="position">The position concerned, or <see langword="null"/> if there is none.</param>
    /// <param name="innerException">The cause, if any.</param>
    public CheckpointStoreException(string message, string stream, long? position, Exception? innerException = null)
        : base(message, innerException)
    {
        Stream = stream;
        Position = position;
    }

    /// <summary>The stream concerned, if known.</summary>
    public string? Stream { get; }

    /// <summary>The position concerned, if any (a refused write has none).</summary>
    public long? Position { get; }
}
