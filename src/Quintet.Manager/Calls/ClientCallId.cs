using System.Globalization;
using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Manager.Calls;

/// <summary>
/// Which call of which client this is, for the owner's completion records: the client's identity, the call's number
/// among its calls (the same on every retry), and the client's watermark below which every call has had its answer.
/// Read from the headers <see cref="CallHeaders.ClientId"/>, <see cref="CallHeaders.CallSequence"/> and
/// <see cref="CallHeaders.AnsweredBelow"/>; a call without a client id has none and runs every time it arrives.
/// </summary>
/// <param name="ClientId">The client's identity.</param>
/// <param name="Sequence">The call's number, 1 or more.</param>
/// <param name="AnsweredBelow">Every call of the client numbered below this has had its answer (0 when the client said nothing).</param>
internal readonly record struct ClientCallId(string ClientId, long Sequence, long AnsweredBelow)
{
    /// <summary>The longest client id taken: the .NET client sends 32 characters; other clients may send a UUID or similar.</summary>
    public const int MaxClientIdLength = 64;

    /// <summary>Reads the call's identity from its headers; null when it has no client id.</summary>
    /// <exception cref="InvocationException"><c>INVALID_ARGUMENT</c>: a header is malformed, the message says which and how.</exception>
    public static ClientCallId? Read(IHeaderDictionary headers)
    {
        var clientId = headers[CallHeaders.ClientId].FirstOrDefault();
        if (clientId is null)
        {
            return null;
        }

        if (clientId.Length is 0 or > MaxClientIdLength || !clientId.All(c => char.IsAsciiLetterOrDigit(c) || c is '-' or '_'))
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"The {CallHeaders.ClientId} header must be 1 to {MaxClientIdLength} ASCII letters, digits, '-' or '_' (the .NET client sends 32 hexadecimal digits); got {Quote(clientId)}.");
        }

        var sequenceText = headers[CallHeaders.CallSequence].FirstOrDefault();
        if (!long.TryParse(sequenceText, NumberStyles.None, CultureInfo.InvariantCulture, out var sequence) || sequence < 1)
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"A call with the {CallHeaders.ClientId} header needs {CallHeaders.CallSequence}: the call's number among the client's calls, a decimal integer of 1 or more, the same on every retry; got {(sequenceText is null ? "none" : Quote(sequenceText))}.");
        }

        var answeredText = headers[CallHeaders.AnsweredBelow].FirstOrDefault();
        var answeredBelow = 0L;
        if (answeredText is not null && (!long.TryParse(answeredText, NumberStyles.None, CultureInfo.InvariantCulture, out answeredBelow) || answeredBelow > sequence))
        {
            throw new InvocationException(StatusCode.InvalidArgument, $"The {CallHeaders.AnsweredBelow} header must be a decimal integer from 0 to the call's own number ({sequence.ToString(CultureInfo.InvariantCulture)}), since this call has not had its answer yet; got {Quote(answeredText)}.");
        }

        return new ClientCallId(clientId, sequence, answeredBelow);
    }

    private static string Quote(string value) => value.Length > 80 ? $"'{value[..80]}...' ({value.Length.ToString(CultureInfo.InvariantCulture)} characters)" : $"'{value}'";
}
