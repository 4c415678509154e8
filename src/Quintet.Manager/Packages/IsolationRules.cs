using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>What an isolated class cannot have yet; checked at deploy and when its QoS changes at run time.</summary>
internal static class IsolationRules
{
    /// <summary>Why <paramref name="spec"/> cannot be served in a worker process, as a QoS error (<c>isolation: ...</c>); null when it can.</summary>
    public static string? Unsupported(QosSpec spec)
    {
        ArgumentNullException.ThrowIfNull(spec);
        return spec.Isolation == IsolationMode.Process && spec.Replication != ReplicationStyle.None
            ? $"isolation: process needs replication none for now (a worker has no replicas and no backups), replication is {(spec.Replication == ReplicationStyle.Active ? "active" : "primaryBackup")}"
            : null;
    }
}
