using System.Security.Cryptography;
using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>A large state of its own making: the target of the tests that hand an active replica's state to a newcomer.</summary>
[ComponentContract("tests.workloads.Blob")]
public interface IBlob
{
    /// <summary>Appends <see cref="GrowRequest.Mebibytes"/> MiB of bytes drawn from <see cref="GrowRequest.Seed"/>, alike at every replica.</summary>
    Task<BlobReply> GrowAsync(GrowRequest request, CancellationToken cancellationToken);

    /// <summary>The state's size and SHA-256, as the replica of the manager that took the call holds it.</summary>
    Task<BlobReply> DigestAsync(GrowRequest request, CancellationToken cancellationToken);
}

/// <summary>How much to grow, and from which seed.</summary>
[ProtoContract]
public sealed class GrowRequest
{
    /// <summary>MiB to append.</summary>
    [ProtoMember(1)]
    public int Mebibytes { get; set; }

    /// <summary>The seed of the appended bytes.</summary>
    [ProtoMember(2)]
    public int Seed { get; set; }
}

/// <summary>The state as one replica holds it.</summary>
[ProtoContract]
public sealed class BlobReply
{
    /// <summary>Bytes held.</summary>
    [ProtoMember(1)]
    public long Bytes { get; set; }

    /// <summary>SHA-256 of the bytes, in hex.</summary>
    [ProtoMember(2)]
    public string Sha256 { get; set; } = string.Empty;

    /// <summary>The manager whose replica answered.</summary>
    [ProtoMember(3)]
    public string Manager { get; set; } = string.Empty;

    /// <summary>Why the answering replica was activated.</summary>
    [ProtoMember(4)]
    public string Activation { get; set; } = string.Empty;
}

/// <summary>Bytes in pages of 1 MiB, appended by calls and handed whole to a new replica.</summary>
public sealed class BlobComponent : Component, IBlob, IMigrateState
{
    /// <summary>The size of a page.</summary>
    public const int PageBytes = 1024 * 1024;

    private readonly List<byte[]> _pages = [];
    private ActivationReason _activation;

    /// <summary>The bytes of page <paramref name="index"/> of a growth from <paramref name="seed"/>: the same everywhere.</summary>
    public static byte[] Page(int seed, int index)
    {
        var page = new byte[PageBytes];
        var state = (ulong)(uint)seed << 32 | (uint)index | 1UL;
        var words = System.Runtime.InteropServices.MemoryMarshal.Cast<byte, ulong>(page.AsSpan());
        for (var i = 0; i < words.Length; i++)
        {
            // xorshift64: cheap, and enough to make every page differ.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            words[i] = state;
        }

        return page;
    }

    /// <inheritdoc />
    public Task<BlobReply> GrowAsync(GrowRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        for (var i = 0; i < request.Mebibytes; i++)
        {
            _pages.Add(Page(request.Seed, _pages.Count));
        }

        return Task.FromResult(Reply(withDigest: false));
    }

    /// <inheritdoc />
    public Task<BlobReply> DigestAsync(GrowRequest request, CancellationToken cancellationToken) => Task.FromResult(Reply(withDigest: true));

    /// <inheritdoc />
    public Task<byte[]> ExportStateAsync(CancellationToken cancellationToken)
    {
        var whole = new byte[(long)_pages.Count * PageBytes];
        for (var i = 0; i < _pages.Count; i++)
        {
            _pages[i].CopyTo(whole, (long)i * PageBytes);
        }

        return Task.FromResult(whole);
    }

    /// <inheritdoc />
    public Task ImportStateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
    {
        _pages.Clear();
        for (var offset = 0; offset < state.Length; offset += PageBytes)
        {
            _pages.Add(state.Slice(offset, Math.Min(PageBytes, state.Length - offset)).ToArray());
        }

        return Task.CompletedTask;
    }

    /// <inheritdoc />
    protected override Task OnActivateAsync(ActivationReason reason, CancellationToken cancellationToken)
    {
        _activation = reason;
        return Task.CompletedTask;
    }

    /// <summary>SHA-256 of the concatenation of <paramref name="pages"/>, in hex.</summary>
    public static string Digest(IEnumerable<byte[]> pages)
    {
        ArgumentNullException.ThrowIfNull(pages);
        using var hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        foreach (var page in pages)
        {
            hash.AppendData(page);
        }

        return Convert.ToHexString(hash.GetHashAndReset());
    }

    private BlobReply Reply(bool withDigest) => new()
    {
        Bytes = (long)_pages.Count * PageBytes,
        Sha256 = withDigest ? Digest(_pages) : string.Empty,
        Manager = Context.Manager,
        Activation = _activation.ToString(),
    };
}
