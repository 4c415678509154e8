using Google.Protobuf;

namespace Quintet.Runtime.Replication;

/// <summary>
/// Serializes messages on the per-command path. <c>ToByteArray</c> and <c>ToByteString</c> allocate a
/// <see cref="CodedOutputStream"/> for every call; writing to a span needs none. On a path that every replica takes for
/// every command, those streams were 4–8 % of each manager's garbage under load (docs/benchmarks.md).
/// </summary>
internal static class WireBytes
{
    public static byte[] ToArray(IMessage message)
    {
        var bytes = new byte[message.CalculateSize()];
        message.WriteTo(bytes.AsSpan());
        return bytes;
    }

    /// <summary>The message's bytes, wrapped without a copy: nobody else holds the array.</summary>
    public static ByteString ToByteString(IMessage message) => UnsafeByteOperations.UnsafeWrap(ToArray(message));
}
