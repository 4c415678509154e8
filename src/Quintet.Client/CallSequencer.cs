using System.Globalization;
using System.Security.Cryptography;

namespace Quintet.Client;

/// <summary>
/// Names a client's calls for the managers' completion records: a random 128-bit client id, a sequence number per call
/// (1, 2, 3, ... in the order calls start, kept on every retry of one call), and the watermark below which every call
/// has had its answer, which lets the managers drop the records of those calls.
/// </summary>
internal sealed class CallSequencer
{
    private readonly SortedSet<long> _outstanding = [];
    private long _next;

    /// <summary>The client's identity: 32 lowercase hexadecimal digits, random per client.</summary>
    public string ClientId { get; } = Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(16));

    /// <summary>Numbers a new call and counts it as waiting for its answer.</summary>
    public long Start()
    {
        lock (_outstanding)
        {
            var sequence = ++_next;
            _outstanding.Add(sequence);
            return sequence;
        }
    }

    /// <summary>The call has had its answer (a reply, a final error, or the client gave it up): it is never sent again.</summary>
    public void Finish(long sequence)
    {
        lock (_outstanding)
        {
            _outstanding.Remove(sequence);
        }
    }

    /// <summary>Every call numbered below this has had its answer.</summary>
    public long AnsweredBelow
    {
        get
        {
            lock (_outstanding)
            {
                return _outstanding.Count > 0 ? _outstanding.Min : _next + 1;
            }
        }
    }

    /// <summary>A number as the call headers carry it.</summary>
    public static string Format(long value) => value.ToString(CultureInfo.InvariantCulture);
}
