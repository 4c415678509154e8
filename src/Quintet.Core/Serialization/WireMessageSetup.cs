using Akka.Actor.Setup;
using Google.Protobuf.Reflection;

namespace Quintet.Core.Serialization;

/// <summary>
/// The proto files whose messages may cross the cluster wire: the allowlist of <see cref="WireSerializer"/>.
/// </summary>
public sealed class WireMessageSetup : Setup
{
    /// <summary>Creates the allowlist from proto file descriptors (for example <c>AdminReflection.Descriptor</c>).</summary>
    public WireMessageSetup(IEnumerable<FileDescriptor> files)
    {
        ArgumentNullException.ThrowIfNull(files);
        Files = [.. files];
    }

    /// <summary>The allowed proto files.</summary>
    public IReadOnlyList<FileDescriptor> Files { get; }
}
