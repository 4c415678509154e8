using Microsoft.Extensions.Logging.Abstractions;
using Quintet.Manager.Security;
using Quintet.Persistence;
using Quintet.Protocol.Admin;

namespace Quintet.Manager.Tests;

public sealed class AuditLogRetentionTests : IDisposable
{
    private readonly string _folder = Directory.CreateTempSubdirectory("quintet-audit-").FullName;

    public void Dispose() => Directory.Delete(_folder, recursive: true);

    [Fact]
    public async Task Beyond_its_bound_the_log_keeps_the_newest_half_behind_a_marker_that_counts_what_went()
    {
        using var store = new LocalCheckpointStore(_folder, NullLogger<LocalCheckpointStore>.Instance);
        using var audit = new AuditLog(store, "manager-1", maxEntries: 10, TimeProvider.System, NullLogger<AuditLog>.Instance, () => []);

        for (var i = 1; i <= 25; i++)
        {
            await audit.WriteAsync(new AuditEntry { Caller = "alice", Action = "a" + i, Result = "OK" });
        }

        var listed = (await audit.ListAsync(100, since: null, caller: null, CancellationToken.None)).Entries;
        var actions = listed.Select(e => e.Action).ToList();

        // Each time the 11th entry is written the oldest go, 5 stay behind one marker that counts every entry gone so far.
        Assert.Equal("a25", actions[0]);
        var marker = Assert.Single(listed, e => e.Action == "audit.retention");
        Assert.Equal(actions.Count - 1, actions.Count(a => a.StartsWith('a') && a != "audit.retention"));
        Assert.Equal(25 - (actions.Count - 1), marker.RemovedBefore);
        Assert.Contains($"{marker.RemovedBefore} older entries of this manager were removed", marker.Message, StringComparison.Ordinal);
        Assert.True(listed.Count <= 11, $"{listed.Count} entries kept");

        // Reopened, as after a restart: the entries and the marker are still there.
        using var again = new AuditLog(store, "manager-1", maxEntries: 10, TimeProvider.System, NullLogger<AuditLog>.Instance, () => []);
        Assert.Equal(actions, (await again.ListAsync(100, null, null, CancellationToken.None)).Entries.Select(e => e.Action));
    }

    [Fact]
    public async Task A_caller_filter_and_a_limit_apply_newest_first()
    {
        using var store = new LocalCheckpointStore(_folder, NullLogger<LocalCheckpointStore>.Instance);
        using var audit = new AuditLog(store, "manager-1", maxEntries: 1000, TimeProvider.System, NullLogger<AuditLog>.Instance, () => []);
        foreach (var (caller, action) in new[] { ("alice", "x1"), ("bob", "y1"), ("alice", "x2"), ("alice", "x3") })
        {
            await audit.WriteAsync(new AuditEntry { Caller = caller, Action = action, Result = "OK" });
            await Task.Delay(2);
        }

        var listed = await audit.ListAsync(2, since: null, caller: "alice", CancellationToken.None);
        Assert.Equal(["x3", "x2"], listed.Entries.Select(e => e.Action));
    }
}
