using System.Globalization;

namespace Quintet.Protocol;

/// <summary>
/// The metadata of a component call, defined once for the managers and every client (the .NET client, the local proxy,
/// and any gRPC client calling through an exported <c>.proto</c>).
/// </summary>
public static class CallHeaders
{
    /// <summary>The request header that names the instance a call is for (its key); empty or absent for a singleton.</summary>
    public const string Key = "quintet-key";

    /// <summary>The request header with the caller's request id; the manager makes one when it is missing.</summary>
    public const string RequestId = "quintet-request-id";

    /// <summary>The request header with who the caller says it is.</summary>
    public const string Caller = "quintet-caller";

    /// <summary>
    /// The request header that names the call for the owner's completion records, so that a retried call is answered
    /// from its record instead of running again: <c>{client-id}:{sequence}:{answered-below}</c>, for example
    /// <c>3f0c9a…e1:42:41</c>. The client's identity is 1 to 64 ASCII letters, digits, <c>-</c> or <c>_</c> (the .NET
    /// client: 32 hexadecimal digits, random per <c>QuintetClient</c>); the sequence is the call's number among the
    /// client's calls (1, 2, 3, ...; decimal), the same on every retry of one call; the watermark, which may be left
    /// out with its colon, says that every call of this client numbered below it has had its answer and will never be
    /// sent again, so the managers may drop those calls' records. A call without it runs every time it arrives (at
    /// least once on failover). One header rather than three: every call carries it, and each header costs both ends.
    /// </summary>
    public const string Call = "quintet-call";

    /// <summary>The value of <see cref="Call"/> for a call.</summary>
    public static string FormatCall(string clientId, long sequence, long answeredBelow) =>
        string.Create(CultureInfo.InvariantCulture, $"{clientId}:{sequence}:{answeredBelow}");

    /// <summary>
    /// The response header in which a manager that passed a call on names the gRPC endpoint of the manager owning the
    /// instance, for example <c>http://127.0.0.1:5054</c>.
    /// </summary>
    public const string ServedBy = "quintet-served-by";

    /// <summary>
    /// The request header of a server-streaming operation (a subscription to an instance's events) that names the last
    /// event position the caller has seen, in decimal: the stream starts with the event after it. Absent: from the
    /// oldest event the instance retains. A caller that resumes sends it with <see cref="EventLog"/>.
    /// </summary>
    public const string EventsAfter = "quintet-events-after";

    /// <summary>
    /// The header that names an instance's event log: the owner sends it in the response headers of every
    /// subscription, and a caller that resumes sends the value it got, so that a log started anew (its events lost with
    /// a manager that held no backup) is told from the one the caller followed (<c>DATA_LOSS</c> then, never a silent gap).
    /// </summary>
    public const string EventLog = "quintet-events-log";

    /// <summary>
    /// The trailer, with the value <c>server-streaming</c>, of the refusal (<c>FAILED_PRECONDITION</c>) a manager gives a
    /// call numbered for completion records (<see cref="Call"/>) on a server-streaming operation: the local proxy, which
    /// cannot tell a unary call from a subscription on the wire, learns from it to open the operation as a stream.
    /// </summary>
    public const string OperationKind = "quintet-operation-kind";

    /// <summary>The value of <see cref="OperationKind"/> for a server-streaming operation.</summary>
    public const string ServerStreaming = "server-streaming";
}
