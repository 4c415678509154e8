using Grpc.Core;

namespace Quintet.Manager.Calls;

/// <summary>
/// What a component's exception means for its caller. Most are the component's own failure (<c>UNKNOWN</c>, with the
/// exception named). Some say that the package's code itself cannot run here (a type that does not load, a method the
/// JIT rejects, a member or assembly that is missing): retrying cannot help, so they answer <c>FAILED_PRECONDITION</c>
/// saying the package is broken and must be deployed again. Deploy checks every type and method it can, so these are
/// what is left to run time: generic code, and assemblies a package loads by itself.
/// </summary>
internal static class ComponentFailure
{
    /// <summary>Whether <paramref name="e"/> is the runtime refusing code (loading or compiling it), not code failing as it ran.</summary>
    public static bool IsBrokenCode(Exception e) => e is BadImageFormatException or InvalidProgramException or TypeLoadException
        or MissingMemberException or System.Security.VerificationException
        || (e is FileNotFoundException or FileLoadException && e.Message.Contains("assembly", StringComparison.OrdinalIgnoreCase));

    /// <summary>The status for <paramref name="e"/>, thrown by <paramref name="component"/> in <paramref name="operation"/> on <paramref name="key"/>.</summary>
    public static InvocationException Of(string component, string operation, string key, Exception e) => IsBrokenCode(e)
        ? BrokenPackage($"{component}.{operation} (key '{key}')", e)
        : new InvocationException(StatusCode.Unknown, $"{component}.{operation} (key '{key}') failed: {e.GetType().Name}: {e.Message}");

    /// <summary>
    /// <c>FAILED_PRECONDITION</c>: <paramref name="what"/> cannot run because its package's code does not load or compile,
    /// as <paramref name="e"/> says; the package must be rebuilt and deployed again.
    /// </summary>
    public static InvocationException BrokenPackage(string what, Exception e) =>
        new(StatusCode.FailedPrecondition, $"{what} cannot run: its package is broken ({e.GetType().Name}: {e.Message}). Rebuild the package and deploy it again.");
}
