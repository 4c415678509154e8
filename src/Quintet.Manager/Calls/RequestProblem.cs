using System.Globalization;
using ProtoBuf;

namespace Quintet.Manager.Calls;

/// <summary>
/// Says why a component call's request could not be read as its operation's message, in words a caller can act on:
/// the decoder's own exceptions ("Arithmetic operation resulted in an overflow", "over-written a file without
/// truncating") describe its internals, not the bytes the caller sent.
/// </summary>
internal static class RequestProblem
{
    /// <summary>The message of the <c>INVALID_ARGUMENT</c> status for a request of <paramref name="length"/> bytes that <paramref name="e"/> refused.</summary>
    public static string Describe(string service, string operation, Type requestType, int length, Exception e)
    {
        var reason = e switch
        {
            OverflowException => "a length or number in it is larger than any message can hold",
            EndOfStreamException => "it ends in the middle of a field",
            ProtoException when e.Message.Contains("wire-type", StringComparison.OrdinalIgnoreCase) => "a field is encoded with a wire type protobuf does not define, or one its field does not use",
            ProtoException when e.Message.StartsWith("Invalid field in source data", StringComparison.Ordinal) => "it holds a field numbered 0 or below, which protobuf does not allow",
            _ => FirstSentence(e.Message),
        };
        return string.Create(
            CultureInfo.InvariantCulture,
            $"The request body ({length} bytes) is not a valid {requestType.Name} protobuf message for {service}/{operation}: {reason}. Send one {requestType.Name} serialized with protobuf ('quintet proto export {service}' gives its .proto).");
    }

    private static string FirstSentence(string message)
    {
        var end = message.IndexOfAny(['.', ';']);
        return (end > 0 ? message[..end] : message).Trim();
    }
}
