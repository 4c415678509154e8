using Google.Protobuf;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Ownership;

// The directory as a snapshot for a joining manager (sent in chunks, installed once the last arrives), and the
// conversion of its entries to and from the wire.
internal sealed partial class InstanceDirectory
{
    private const int SnapshotChunkEntries = 2000;
    private readonly List<DirectoryEntry> _snapshotEntries = [];
    private long _snapshotView = -1;

    private async Task SendSnapshotAsync(LightGroupMember member, long viewId, List<LightMemberId> targets)
    {
        List<DirectorySnapshot> chunks;
        lock (_gate)
        {
            chunks = [];
            var entries = _placements.Select(p =>
            {
                var entry = new DirectoryEntry { Instance = ToWire(p.Key), Owner = ToWire(p.Value.Owner), Epoch = p.Value.Epoch };
                entry.Backups.AddRange(p.Value.Backups?.Select(ToWire) ?? []);
                return entry;
            }).ToList();
            for (var i = 0; i == 0 || i < entries.Count; i += SnapshotChunkEntries)
            {
                var chunk = new DirectorySnapshot { TakenInView = viewId };
                chunk.Entries.AddRange(entries.Skip(i).Take(SnapshotChunkEntries));
                chunks.Add(chunk);
            }

            chunks[0].Managers.AddRange(_managers.Values);
            chunks[^1].Last = true;
        }

        foreach (var target in targets)
        {
            try
            {
                foreach (var chunk in chunks)
                {
                    await member.SendAsync(target, new DirectoryEvent { Snapshot = chunk }.ToByteArray());
                }
            }
            catch (GroupUnavailableException e)
            {
                // The target left, or this member is rejoining; the next view's oldest member sends again.
                LogSnapshotNotSent(logger, e, target.ToString());
            }
        }
    }

    private void OnSnapshot(LightGroupMember member, DirectorySnapshot chunk)
    {
        List<DirectoryEvent> replay;
        lock (_gate)
        {
            if (_isSynced || chunk.TakenInView < _snapshotView)
            {
                return;
            }

            if (chunk.TakenInView > _snapshotView)
            {
                _snapshotView = chunk.TakenInView;
                _snapshotEntries.Clear();
                _managers.Clear();
            }

            _snapshotEntries.AddRange(chunk.Entries);
            foreach (var manager in chunk.Managers)
            {
                _managers[FromWire(manager.Member)] = manager;
            }

            if (!chunk.Last)
            {
                return;
            }

            _placements.Clear();
            _ownedCounts.Clear();
            foreach (var entry in _snapshotEntries)
            {
                var id = FromWire(entry.Instance);
                Place(id, FromWire(entry.Owner), entry.Epoch);
                if (entry.Backups.Count > 0)
                {
                    _placements[id].Backups = [.. entry.Backups.Select(FromWire)];
                }
            }

            _snapshotEntries.Clear();
            replay = [.. _buffered.Where(b => b.ViewId >= _snapshotView).Select(b => b.Event)];
            _buffered.Clear();
            MarkSynced(member);
        }

        foreach (var directoryEvent in replay)
        {
            Apply(member, directoryEvent);
        }

        LogSynced(logger, Count, _snapshotView);
    }

    private static InstanceRef ToWire(InstanceId id) => new() { ClassName = id.ClassName, Key = id.Key };

    // Every entry of a class names it: one string per class, not one per entry.
    private InstanceId FromWire(InstanceRef instance) => new(_classNames.GetOrAdd(instance.ClassName, instance.ClassName), instance.Key);

    private static DirectoryMember ToWire(LightMemberId id) =>
        new() { Node = id.Host.Node, Uid = id.Host.Uid, Incarnation = id.Host.Incarnation, Local = id.Local };

    private static LightMemberId FromWire(DirectoryMember member) =>
        new(new MemberId(member.Node, member.Uid, member.Incarnation), member.Local);

    [LoggerMessage(Level = LogLevel.Information, Message = "Instance directory copied: {Count} instances, as of light view {View}")]
    private static partial void LogSynced(ILogger logger, int count, long view);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Directory snapshot not sent to {Target}")]
    private static partial void LogSnapshotNotSent(ILogger logger, Exception exception, string target);
}
