namespace Quintet.Core.Groups;

/// <summary>
/// How large one group message may be. A message travels whole, in one frame to each manager: the remoting
/// transport's frames are at most 4 MiB, and the direct transport queues at most 8 MiB for a manager and reads frames
/// of at most 16 MiB. A larger message could never be delivered, and since a group retransmits what is not stable, it
/// would stall the group for good; so it is refused when it is sent. Larger state goes in chunks (state transfer).
/// </summary>
public static class GroupMessageLimits
{
    /// <summary>The largest payload of a heavyweight group's multicast or send: 4 MiB less room for the envelope.</summary>
    public const int MaxPayloadBytes = (4 * 1024 * 1024) - (64 * 1024);

    /// <summary>The largest payload of a light group's multicast or send: less room again for the light header.</summary>
    public const int MaxLightPayloadBytes = MaxPayloadBytes - (8 * 1024);

    /// <summary>Throws when a payload of <paramref name="length"/> bytes is longer than <paramref name="limit"/>, saying what to do instead.</summary>
    /// <exception cref="ArgumentException">The payload is too long; nothing was sent.</exception>
    internal static void Check(int length, int limit, string group, string paramName)
    {
        if (length > limit)
        {
            throw new ArgumentException(
                $"A message of {length} bytes to group '{group}' is refused: a group message carries at most {limit} bytes ({limit / (1024.0 * 1024):0.##} MiB), since it travels whole in one frame. Nothing was sent; send less at a time, or large state by state transfer, which goes in chunks.",
                paramName);
        }
    }
}
