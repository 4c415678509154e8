using Quintet.Console.Admin;

namespace Quintet.Console.Components.Calls;

/// <summary>The state of one call a page makes, for <see cref="CallStatus"/>: running, failed with its status, or done.</summary>
public sealed class CallState
{
    /// <summary>What the call does, in a few words: "Deploying Bank.zip".</summary>
    public string What { get; private set; } = string.Empty;

    /// <summary>Whether it runs now.</summary>
    public bool Running { get; private set; }

    /// <summary>The failure, as <see cref="AdminProblem.Describe"/> puts it.</summary>
    public string? Failure { get; private set; }

    /// <summary>What it did, when it succeeded.</summary>
    public string? Success { get; private set; }

    /// <summary>
    /// Marks the call as failed before it ran: what the user asked cannot be sent (<paramref name="problem"/> says why);
    /// <paramref name="what"/> names what was being checked.
    /// </summary>
    public void Reject(string problem, string what = "Checking the form")
    {
        What = what;
        Running = false;
        Success = null;
        Failure = problem;
    }

    /// <summary>Runs <paramref name="call"/>, keeping its state; <paramref name="changed"/> re-renders the page at each step.</summary>
    /// <returns>The result, or default when the call failed.</returns>
    public async Task<T?> RunAsync<T>(string what, Func<Task<T>> call, Func<T, string?> success, Action changed)
    {
        ArgumentNullException.ThrowIfNull(call);
        ArgumentNullException.ThrowIfNull(success);
        ArgumentNullException.ThrowIfNull(changed);
        What = what;
        Running = true;
        Failure = null;
        Success = null;
        changed();
        try
        {
            var result = await call();
            Success = success(result);
            return result;
        }
        catch (Exception e) when (e is Grpc.Core.RpcException or OperationCanceledException or ArgumentException or InvalidOperationException or IOException)
        {
            Failure = AdminProblem.Describe(e);
            return default;
        }
        finally
        {
            Running = false;
            changed();
        }
    }
}
