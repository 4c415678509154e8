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
    /// The response header in which a manager that passed a call on names the gRPC endpoint of the manager owning the
    /// instance, for example <c>http://127.0.0.1:5054</c>.
    /// </summary>
    public const string ServedBy = "quintet-served-by";
}
