using Google.Protobuf.Reflection;

namespace Quintet.Core.Serialization;

/// <summary>A proto file whose messages may cross the cluster wire; register one per file in the service collection.</summary>
/// <param name="Descriptor">The file, for example <c>AdminReflection.Descriptor</c>.</param>
public sealed record WireProtoFile(FileDescriptor Descriptor);
