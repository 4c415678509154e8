using System.Text.Json.Nodes;
using Grpc.Core;
using Quintet.TestingHost.Checking;

namespace Quintet.TestingHost.Workloads;

/// <summary>An operation a workload's client is about to perform, as it appears in the history.</summary>
/// <param name="Function">The operation (Jepsen's <c>:f</c>): <c>read</c>, <c>write</c>, <c>cas</c>, <c>add</c>, ...</param>
/// <param name="Key">The object it is on, or null.</param>
/// <param name="Value">Its argument, as JSON.</param>
public readonly record struct WorkloadOperation(string Function, string? Key, JsonNode? Value);

/// <summary>How an operation that returned ended: it took effect (<see cref="Ok"/>) or it certainly did not (<see cref="Fail"/>).</summary>
/// <param name="Applied">True when the operation took effect.</param>
/// <param name="Value">The result recorded in the history (a read's value); for a failure, usually the argument.</param>
public readonly record struct OperationOutcome(bool Applied, JsonNode? Value)
{
    /// <summary>The operation took effect with this result.</summary>
    /// <param name="value">The result.</param>
    /// <returns>The outcome.</returns>
    public static OperationOutcome Ok(JsonNode? value) => new(true, value);

    /// <summary>The operation certainly did not take effect (a compare-and-set whose expected value did not match).</summary>
    /// <param name="value">The value to record.</param>
    /// <returns>The outcome.</returns>
    public static OperationOutcome Fail(JsonNode? value) => new(false, value);
}

/// <summary>
/// A workload: what its clients do, how each operation is performed against the system under test, what is read at
/// the end, and which checker judges the history. <see cref="WorkloadRunner"/> runs it with many clients and records
/// the history; subclass it (a few dozen lines) to test another data structure or your own component.
/// </summary>
/// <remarks>
/// Members are called from many clients at once and must be thread-safe. An operation that throws is recorded as
/// <c>info</c> (its outcome unknown) unless <see cref="IsDefiniteFailure"/> says it certainly did not take effect.
/// </remarks>
public abstract class Workload
{
    /// <summary>The workload's name, for reports and file names (<c>register</c>, <c>set</c>, ...).</summary>
    public abstract string Name { get; }

    /// <summary>The next operation of a client.</summary>
    /// <param name="client">The client (0 to <see cref="WorkloadOptions.Clients"/> - 1).</param>
    /// <param name="random">The client's own generator, seeded from <see cref="WorkloadOptions.Seed"/>.</param>
    /// <returns>The operation.</returns>
    public abstract WorkloadOperation NextOperation(int client, Random random);

    /// <summary>Performs an operation against the system.</summary>
    /// <param name="client">The client performing it.</param>
    /// <param name="operation">The operation, as <see cref="NextOperation"/> or <see cref="FinalOperations"/> made it.</param>
    /// <param name="cancellationToken">Cancelled when the operation's time is up.</param>
    /// <returns>Whether it took effect, and its result.</returns>
    public abstract Task<OperationOutcome> InvokeAsync(int client, WorkloadOperation operation, CancellationToken cancellationToken);

    /// <summary>What to do once the faults have healed (a final read, a drain), each retried until it succeeds.</summary>
    /// <value>Default: nothing.</value>
    public virtual IReadOnlyList<WorkloadOperation> FinalOperations => [];

    /// <summary>
    /// Whether an exception thrown by <see cref="InvokeAsync"/> means the operation certainly did not take effect
    /// (recorded as <c>fail</c>) rather than that its outcome is unknown (<c>info</c>). Say true only when sure: a wrong
    /// <c>fail</c> makes a checker drop an operation that happened.
    /// </summary>
    /// <param name="exception">What was thrown.</param>
    /// <returns>Default: true for gRPC statuses a call gets before anything runs (<c>INVALID_ARGUMENT</c>,
    /// <c>NOT_FOUND</c>, <c>PERMISSION_DENIED</c>, <c>UNAUTHENTICATED</c>, <c>UNIMPLEMENTED</c>) and for
    /// <c>UNAVAILABLE</c> when no connection could be made (the request was never sent: connection refused, or the channel
    /// could not connect at all) on the call's only attempt (a call the client failed over may have taken effect on an
    /// earlier one); false for
    /// everything else, timeouts and other <c>UNAVAILABLE</c>s included.</returns>
    public virtual bool IsDefiniteFailure(Exception exception) =>
        exception is RpcException
        {
            StatusCode: StatusCode.InvalidArgument or StatusCode.NotFound or StatusCode.PermissionDenied
                or StatusCode.Unauthenticated or StatusCode.Unimplemented,
        }
        || (exception is RpcException { StatusCode: StatusCode.Unavailable } unavailable
            && OnlyOneAttempt(unavailable.Status.Detail)
            && (unavailable.Status.Detail.StartsWith(SubchannelConnectFailed, StringComparison.Ordinal) || NeverConnected(unavailable.Status.DebugException)));

    /// <summary>
    /// How grpc-dotnet's channel fails a call it could not give a connection to (its load balancer's pick failed): no
    /// stream was opened, so nothing reached a manager. A paused or cut-off manager gives this, with a timeout rather than
    /// a refusal beneath it.
    /// </summary>
    private const string SubchannelConnectFailed = "Error connecting to subchannel.";

    /// <summary>What <c>QuintetClient</c> adds to the status of a call it retried before giving up.</summary>
    private const string GaveUpAfter = "(gave up after ";

    /// <summary>
    /// Whether the call was tried once: the status of a call the client failed over says how many attempts it made, and
    /// only the last one's error is seen, so an earlier attempt may have reached a manager and taken effect.
    /// </summary>
    private static bool OnlyOneAttempt(string detail)
    {
        var at = detail.IndexOf(GaveUpAfter, StringComparison.Ordinal);
        if (at < 0)
        {
            return true;
        }

        var digits = detail.AsSpan(at + GaveUpAfter.Length);
        var length = 0;
        while (length < digits.Length && char.IsAsciiDigit(digits[length]))
        {
            length++;
        }

        return int.TryParse(digits[..length], System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var attempts) && attempts == 1;
    }

    private static bool NeverConnected(Exception? exception)
    {
        for (var e = exception; e is not null; e = e.InnerException)
        {
            if (e is System.Net.Sockets.SocketException { SocketErrorCode: System.Net.Sockets.SocketError.ConnectionRefused })
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Judges a history of this workload.</summary>
    /// <param name="history">The events, in real-time order.</param>
    /// <returns>The checker's verdict.</returns>
    public abstract CheckVerdict Check(IReadOnlyList<HistoryEvent> history);
}
