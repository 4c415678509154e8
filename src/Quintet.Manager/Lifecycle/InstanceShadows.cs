using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;
using Quintet.Manager.Ownership;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// The shadows of the instances this manager owns (live, retired or migrating), one per instance: what activation,
/// retirement, migration and deactivation act on and the admin API lists.
/// </summary>
internal sealed class InstanceShadows
{
    private readonly ConcurrentDictionary<InstanceId, Shadow> _shadows = new();
    private readonly DeployedPackages _packages;
    private readonly InvocationFeed? _feed;

    public InstanceShadows(InstanceDirectory directory, DeployedPackages packages, InvocationFeed? feed = null)
    {
        _packages = packages;
        _feed = feed;
        directory.MovedHere += OnMovedHere;
    }

    /// <summary>The shadows, as they stand now.</summary>
    public IReadOnlyCollection<Shadow> All => [.. _shadows.Values];

    /// <summary>Instances this manager hosts (active, retired or migrating).</summary>
    public int Count => _shadows.Count;

    /// <summary>Instances this manager hosts that are live (activated, not retired).</summary>
    public int LiveCount => _shadows.Values.Count(s => s.Instance is not null);

    /// <summary>The shadow of an instance, made at <paramref name="epoch"/> if it has none.</summary>
    public Shadow GetOrAdd(ComponentClass componentClass, string key, long epoch) =>
        _shadows.GetOrAdd(new InstanceId(componentClass.Name, key), _ => new Shadow(componentClass, key, epoch) { Feed = _feed });

    public bool TryGet(InstanceId id, [MaybeNullWhen(false)] out Shadow shadow) => _shadows.TryGetValue(id, out shadow);

    /// <summary>Forgets this shadow of its instance (not a newer one made since).</summary>
    public void Remove(Shadow shadow)
    {
        if (_shadows.TryRemove(new KeyValuePair<InstanceId, Shadow>(shadow.Id, shadow)))
        {
            // Its records went with it (to the new owner, or nowhere): they leave this manager's totals.
            shadow.Completions?.Clear();
        }
    }

    public void Clear()
    {
        foreach (var shadow in _shadows.Values)
        {
            shadow.Completions?.Clear();
        }

        _shadows.Clear();
    }

    /// <summary>An instance moved here: its shadow shows at once (activated on its next call, with what it arrived with).</summary>
    private void OnMovedHere(InstanceId id, long epoch)
    {
        if (_packages.FindClass(id.ClassName) is { } componentClass)
        {
            GetOrAdd(componentClass, id.Key, epoch);
        }
    }
}
