namespace Quintet.Cli;

/// <summary>The exit codes of the <c>quintet</c> command, for scripts (docs/cli.md lists them with the gRPC statuses behind them).</summary>
public static class ExitCodes
{
    /// <summary>Done.</summary>
    public const int Ok = 0;

    /// <summary>The command failed; the message says why. A manager's refusal with any status not mapped below (NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION, ...), its name printed.</summary>
    public const int Failed = 1;

    /// <summary>The command line is wrong (unknown command or option, bad value, options that do not go together, a file that cannot be read, an unknown context).</summary>
    public const int Usage = 2;

    /// <summary>No manager answered at the given endpoint (UNAVAILABLE, DEADLINE_EXCEEDED).</summary>
    public const int Unreachable = 3;

    /// <summary>The manager refused the caller: no credentials it accepts (UNAUTHENTICATED), or not the role the command needs (PERMISSION_DENIED).</summary>
    public const int Denied = 4;

    /// <summary>The TLS handshake failed: the manager's certificate is not from the CA given with --ca, or the manager refused the connection.</summary>
    public const int TlsFailed = 5;

    /// <summary>The configuration file of saved contexts cannot be read, written, or is not valid; the message names the file and line.</summary>
    public const int Config = 6;

    /// <summary>Stopped by Ctrl+C before the work was done (or the call was CANCELLED).</summary>
    public const int Interrupted = 130;
}
