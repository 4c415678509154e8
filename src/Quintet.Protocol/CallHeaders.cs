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
    /// The request header with the calling client's identity (the .NET client: 32 hexadecimal digits, random per
    /// <c>QuintetClient</c>). With <see cref="CallSequence"/> it names one call for the owner's completion records, so
    /// that a retried call is answered from its record instead of running again. A call without it runs every time it
    /// arrives (at least once on failover).
    /// </summary>
    public const string ClientId = "quintet-client-id";

    /// <summary>
    /// The request header with the call's number among its client's calls (1, 2, 3, ...; decimal), the same on every
    /// retry of one call.
    /// </summary>
    public const string CallSequence = "quintet-call-seq";

    /// <summary>
    /// The request header with the client's acknowledgement watermark (decimal): every call of this client numbered
    /// below it has had its answer and will never be sent again, so the managers may drop those calls' records.
    /// </summary>
    public const string AnsweredBelow = "quintet-answered-below";

    /// <summary>
    /// The response header in which a manager that passed a call on names the gRPC endpoint of the manager owning the
    /// instance, for example <c>http://127.0.0.1:5054</c>.
    /// </summary>
    public const string ServedBy = "quintet-served-by";
}
