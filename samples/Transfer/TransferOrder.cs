using System.Buffers.Binary;
using System.Text;

namespace Samples.Transfer;

/// <summary>What a transfer asks of its accounts: the payload of its transaction.</summary>
/// <param name="From">The account debited.</param>
/// <param name="To">The account credited.</param>
/// <param name="Amount">Cents.</param>
/// <param name="PrepareDelayMs">How long each account takes to prepare.</param>
public sealed record TransferOrder(string From, string To, long Amount, int PrepareDelayMs)
{
    /// <summary>The payload's bytes.</summary>
    public byte[] Encode()
    {
        var from = Encoding.UTF8.GetBytes(From);
        var to = Encoding.UTF8.GetBytes(To);
        var bytes = new byte[16 + from.Length + to.Length + 4];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, Amount);
        BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(8), PrepareDelayMs);
        BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(12), from.Length);
        from.CopyTo(bytes, 16);
        BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(16 + from.Length), to.Length);
        to.CopyTo(bytes, 20 + from.Length);
        return bytes;
    }

    /// <summary>Reads a payload.</summary>
    public static TransferOrder Decode(ReadOnlySpan<byte> bytes)
    {
        var amount = BinaryPrimitives.ReadInt64LittleEndian(bytes);
        var delay = BinaryPrimitives.ReadInt32LittleEndian(bytes[8..]);
        var fromLength = BinaryPrimitives.ReadInt32LittleEndian(bytes[12..]);
        var from = Encoding.UTF8.GetString(bytes.Slice(16, fromLength));
        var toLength = BinaryPrimitives.ReadInt32LittleEndian(bytes[(16 + fromLength)..]);
        var to = Encoding.UTF8.GetString(bytes.Slice(20 + fromLength, toLength));
        return new TransferOrder(from, to, amount, delay);
    }
}
