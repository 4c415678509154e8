using Google.Protobuf;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Internal;
using Quintet.Runtime.Replication;

namespace Quintet.Manager.Ownership;

// The directory as a snapshot for a joining manager: length-delimited pages of entries, so that a directory of many
// instances is neither one message nor one large array at either end. The machine transfers it in chunks.
internal sealed partial class DirectoryState
{
    private const int PageEntries = 2000;

    /// <inheritdoc />
    public IStateSnapshot CaptureSnapshot() => new PagedStateSnapshot(Pages());

    /// <inheritdoc />
    public byte[] TakeSnapshot()
    {
        using var output = new MemoryStream();
        foreach (var page in Pages())
        {
            output.Write(page);
        }

        return output.ToArray();
    }

    /// <inheritdoc />
    public void RestoreSnapshot(ReadOnlySpan<byte> snapshot)
    {
        using var input = new MemoryStream(snapshot.ToArray(), writable: false);
        RestoreSnapshot(input);
    }

    /// <inheritdoc />
    public void RestoreSnapshot(Stream snapshot)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        _placements.Clear();
        _ownedCounts.Clear();
        _managers.Clear();
        _viewMembers = [];
        while (snapshot.Position < snapshot.Length)
        {
            var page = DirectorySnapshotPage.Parser.ParseDelimitedFrom(snapshot);
            foreach (var manager in page.Managers)
            {
                _managers[Member(manager.Member)] = manager;
            }

            // The view the snapshot was captured in: the joiner is not told of it, and it decides who owns what.
            _viewMembers.UnionWith(page.ViewMembers.Select(Member));
            foreach (var entry in page.Entries)
            {
                var id = FromWire(entry.Instance);
                Place(id, Member(entry.Owner), entry.Epoch);
                if (entry.Backups.Count > 0)
                {
                    _placements[id].Backups = [.. entry.Backups.Select(Member)];
                }
            }
        }
    }

    /// <summary>The state as pages (under the machine's lock): each is copied out, so the capture never changes.</summary>
    private List<byte[]> Pages()
    {
        // A few owners hold many instances: one wire member each, shared by their entries (it is only serialized).
        Dictionary<LightMemberId, DirectoryMember> members = [];
        DirectoryMember Wire(LightMemberId member)
        {
            if (!members.TryGetValue(member, out var wire))
            {
                wire = ToWire(member);
                members[member] = wire;
            }

            return wire;
        }

        var page = new DirectorySnapshotPage();
        page.Managers.AddRange(_managers.Values);
        page.ViewMembers.AddRange(_viewMembers.Select(Wire));
        List<byte[]> pages = [];
        foreach (var (id, placement) in _placements)
        {
            if (page.Entries.Count == PageEntries)
            {
                pages.Add(Delimited(page));
                page = new DirectorySnapshotPage();
            }

            var entry = new DirectoryEntry { Instance = ToWire(id), Owner = Wire(placement.Owner), Epoch = placement.Epoch };
            if (placement.Backups is { } backups)
            {
                entry.Backups.AddRange(backups.Select(Wire));
            }

            page.Entries.Add(entry);
        }

        pages.Add(Delimited(page));
        return pages;
    }

    private static byte[] Delimited(DirectorySnapshotPage page)
    {
        using var output = new MemoryStream();
        page.WriteDelimitedTo(output);
        return output.ToArray();
    }
}
