using System.Buffers.Binary;
using System.Security.Cryptography;
using Quintet.Runtime.Replication;

namespace Quintet.Runtime.Tests.Replication;

/// <summary>
/// A large test state kept in 1 MiB pages, copy-on-write: a capture hands over the page list, and a command that
/// writes to a page replaces that page with a changed copy. A command is (page: int32, value: int64): it writes value
/// at the start of the page.
/// </summary>
internal sealed class PagedBlobState : IReplicatedState
{
    public const int PageBytes = 1 << 20;
    private static int _salts;
    private readonly byte[] _salt;
    private byte[][] _pages;

    /// <param name="pages">MiB of state.</param>
    /// <param name="seed">Content: page i is filled with seed + i (0: zeros).</param>
    /// <param name="saltedCaptures">Captures begin with a byte of this replica's own, so that two replicas' captures of
    /// equal states differ (as a state with a non-deterministic encoding would).</param>
    public PagedBlobState(int pages, byte seed = 0, bool saltedCaptures = false)
    {
        _salt = saltedCaptures ? [(byte)Interlocked.Increment(ref _salts)] : [];
        _pages = new byte[pages][];
        for (var i = 0; i < pages; i++)
        {
            _pages[i] = new byte[PageBytes];
            if (seed != 0)
            {
                // Distinct content per page, so that a misplaced chunk shows in the digest.
                _pages[i].AsSpan().Fill((byte)(seed + i));
            }
        }
    }

    public int Captures { get; private set; }

    public long Applied { get; private set; }

    public static byte[] Command(int page, long value)
    {
        var command = new byte[12];
        BinaryPrimitives.WriteInt32LittleEndian(command, page);
        BinaryPrimitives.WriteInt64LittleEndian(command.AsSpan(4), value);
        return command;
    }

    public byte[] Apply(ReadOnlySpan<byte> command)
    {
        var page = BinaryPrimitives.ReadInt32LittleEndian(command) % _pages.Length;
        var copy = (byte[])_pages[page].Clone();
        command[4..12].CopyTo(copy);
        _pages[page] = copy;
        Applied++;
        return [];
    }

    public byte[] TakeSnapshot() => [.. _pages.SelectMany(p => p)];

    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        using var stream = new MemoryStream(snapshot.ToArray());
        RestoreSnapshot(stream);
    }

    public IStateSnapshot CaptureSnapshot()
    {
        Captures++;
        return new PagedStateSnapshot([_salt, .. _pages]);
    }

    public void RestoreSnapshot(Stream snapshot)
    {
        snapshot.Position += _salt.Length;
        var pages = new byte[(snapshot.Length - snapshot.Position) / PageBytes][];
        for (var i = 0; i < pages.Length; i++)
        {
            pages[i] = new byte[PageBytes];
            snapshot.ReadExactly(pages[i]);
        }

        _pages = pages;
    }

    public string Digest()
    {
        using var hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        foreach (var page in _pages)
        {
            hash.AppendData(page);
        }

        return Convert.ToHexString(hash.GetCurrentHash());
    }
}
