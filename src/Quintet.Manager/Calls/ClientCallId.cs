using System.Buffers;
using System.Globalization;
using Grpc.Core;
using Quintet.Protocol;

namespace Quintet.Manager.Calls;

/// <summary>
/// Which call of which client this is, for the owner's completion records: the client's identity, the call's number
/// among its calls (the same on every retry), and the client's watermark below which every call has had its answer.
/// Read from the header <see cref="CallHeaders.Call"/>; a call without it has none and runs every time it arrives.
/// </summary>
/// <param name="ClientId">The client's identity.</param>
/// <param name="Sequence">The call's number, 1 or more.</param>
/// <param name="AnsweredBelow">Every call of the client numbered below this has had its answer (0 when the client said nothing).</param>
internal readonly record struct ClientCallId(string ClientId, long Sequence, long AnsweredBelow)
{
    /// <summary>The longest client id taken: the .NET client sends 32 characters; other clients may send a UUID or similar.</summary>
    public const int MaxClientIdLength = 64;

    private static readonly SearchValues<char> ClientIdCharacters = SearchValues.Create("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_");

    /// <summary>Reads the call's identity from its <see cref="CallHeaders.Call"/> header; null when it has none.</summary>
    /// <exception cref="InvocationException"><c>INVALID_ARGUMENT</c>: the header is malformed, the message says how.</exception>
    public static ClientCallId? Read(IHeaderDictionary headers)
    {
        var value = headers.First(CallHeaders.Call);
        if (value is null)
        {
            return null;
        }

        var text = value.AsSpan();
        var first = text.IndexOf(':');
        var clientId = first < 0 ? text : text[..first];
        if (clientId.Length is 0 or > MaxClientIdLength || clientId.ContainsAnyExcept(ClientIdCharacters))
        {
            throw Malformed(value, $"its client id ({Quote(clientId.ToString())}) must be 1 to {MaxClientIdLength} ASCII letters, digits, '-' or '_' (the .NET client sends 32 hexadecimal digits)");
        }

        var rest = first < 0 ? [] : text[(first + 1)..];
        var second = rest.IndexOf(':');
        var sequenceText = second < 0 ? rest : rest[..second];
        if (first < 0 || !long.TryParse(sequenceText, NumberStyles.None, CultureInfo.InvariantCulture, out var sequence) || sequence < 1)
        {
            throw Malformed(value, "after the client id and a colon it needs the call's number among the client's calls, a decimal integer of 1 or more, the same on every retry");
        }

        var answeredBelow = 0L;
        if (second >= 0 && (!long.TryParse(rest[(second + 1)..], NumberStyles.None, CultureInfo.InvariantCulture, out answeredBelow) || answeredBelow > sequence))
        {
            throw Malformed(value, $"its last part, the watermark, must be a decimal integer from 0 to the call's own number ({sequence.ToString(CultureInfo.InvariantCulture)}), since this call has not had its answer yet");
        }

        return new ClientCallId(clientId.ToString(), sequence, answeredBelow);
    }

    private static InvocationException Malformed(string value, string problem) =>
        new(StatusCode.InvalidArgument, $"The {CallHeaders.Call} header is '{{client-id}}:{{sequence}}:{{answered-below}}' (the last part may be left out); got {Quote(value)}: {problem}.");

    private static string Quote(string value) => value.Length > 80 ? $"'{value[..80]}...' ({value.Length.ToString(CultureInfo.InvariantCulture)} characters)" : $"'{value}'";
}
