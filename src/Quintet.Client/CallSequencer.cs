using System.Security.Cryptography;
using Quintet.Protocol;

namespace Quintet.Client;

/// <summary>
/// Names a client's calls for the managers' completion records: a random 128-bit client id, a sequence number per call
/// (1, 2, 3, ... in the order calls start, kept on every retry of one call), and the watermark below which every call
/// has had its answer, which lets the managers drop the records of those calls.
/// </summary>
/// <remarks>
/// Sequence numbers are consecutive, so the calls still waiting are a window from the oldest unanswered call to the
/// newest started one: a ring of flags indexed by sequence number, no search and no allocation per call. The lock is
/// held for a few instructions; the watermark is read without it.
/// </remarks>
internal sealed class CallSequencer
{
    private readonly Lock _lock = new();

    // _answered[s & mask] tells whether call s (oldest <= s <= _next) has had its answer.
    private bool[] _answered = new bool[64];
    private long _oldest = 1;
    private long _next;
    private long _answeredBelow = 1;

    /// <summary>The client's identity: 32 lowercase hexadecimal digits, random per client.</summary>
    public string ClientId { get; } = Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(16));

    /// <summary>Numbers a new call and counts it as waiting for its answer.</summary>
    public long Start()
    {
        lock (_lock)
        {
            var sequence = ++_next;
            if (sequence - _oldest >= _answered.Length)
            {
                Grow();
            }

            _answered[sequence & (_answered.Length - 1)] = false;
            return sequence;
        }
    }

    /// <summary>The call has had its answer (a reply, a final error, or the client gave it up): it is never sent again.</summary>
    public void Finish(long sequence)
    {
        lock (_lock)
        {
            if (sequence < _oldest || sequence > _next)
            {
                return;
            }

            var mask = _answered.Length - 1;
            _answered[sequence & mask] = true;
            while (_oldest <= _next && _answered[_oldest & mask])
            {
                _oldest++;
            }

            Volatile.Write(ref _answeredBelow, _oldest);
        }
    }

    /// <summary>Every call numbered below this has had its answer.</summary>
    public long AnsweredBelow => Volatile.Read(ref _answeredBelow);

    /// <summary>The <c>quintet-call</c> header's value for an attempt of call <paramref name="sequence"/>: the client, the call, and the watermark as it stands.</summary>
    public string CallHeader(long sequence) => CallHeaders.FormatCall(ClientId, sequence, AnsweredBelow);

    // A call that waits long keeps the window open behind it while later calls start: double the ring, keeping each
    // waiting call's flag at its sequence number's new place.
    private void Grow()
    {
        var grown = new bool[_answered.Length * 2];
        for (var sequence = _oldest; sequence < _next; sequence++)
        {
            grown[sequence & (grown.Length - 1)] = _answered[sequence & (_answered.Length - 1)];
        }

        _answered = grown;
    }
}
