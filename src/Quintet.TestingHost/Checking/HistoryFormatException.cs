namespace Quintet.TestingHost.Checking;

/// <summary>A history that cannot be read or that is not well formed (an operation completed twice, by another process, and so on).</summary>
public sealed class HistoryFormatException : FormatException
{
    /// <summary>Creates an exception without details.</summary>
    public HistoryFormatException()
    {
    }

    /// <summary>Creates an exception with a message.</summary>
    /// <param name="message">What is wrong.</param>
    public HistoryFormatException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with a message and its cause.</summary>
    /// <param name="message">What is wrong.</param>
    /// <param name="innerException">The cause.</param>
    public HistoryFormatException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates an exception for a line of a file.</summary>
    /// <param name="lineNumber">The line, counted from 1.</param>
    /// <param name="message">What is wrong with it.</param>
    /// <param name="innerException">The cause, if any.</param>
    public HistoryFormatException(long lineNumber, string message, Exception? innerException = null)
        : base($"Line {lineNumber}: {message}", innerException)
    {
        LineNumber = lineNumber;
    }

    /// <summary>The line of the file (counted from 1) or the position of the event in the history (counted from 1), when known.</summary>
    public long? LineNumber { get; }
}
