namespace Quintet.Manager.Packages;

/// <summary>
/// The packages deployed on this manager, their classes and the contracts they serve: what a call's contract is resolved
/// against. Changed as one: a package's name, classes and contracts appear and go together.
/// </summary>
internal sealed class DeployedPackages
{
    private readonly Lock _gate = new();
    private readonly Dictionary<string, ComponentPackage> _packages = new(StringComparer.Ordinal);
    private readonly Dictionary<string, (ComponentClass Class, ComponentContract Contract)> _services = new(StringComparer.Ordinal);
    private readonly Dictionary<string, ComponentClass> _classes = new(StringComparer.Ordinal);
    private volatile bool _caughtUp;
    private HashSet<string>? _expected;

    /// <summary>
    /// Whether this manager has what the cluster had deployed when it joined (copied from another manager, or there was
    /// none to copy from). Until then a contract not served here may be served once the copy is done.
    /// </summary>
    public bool CaughtUp => _caughtUp;

    /// <summary>Records that the packages deployed before this manager joined are here (or could not be copied).</summary>
    public void MarkCaughtUp() => _caughtUp = true;

    /// <summary>Records the packages another manager listed as the cluster's while this manager catches up with them.</summary>
    public void ExpectFromCatchUp(IEnumerable<string> names)
    {
        lock (_gate)
        {
            _expected = [.. names];
        }
    }

    /// <summary>
    /// Whether this manager has caught up (<see cref="CaughtUp"/>); if not, how many of the packages the cluster has it
    /// has loaded, of how many (null before another manager listed them).
    /// </summary>
    public (bool CaughtUp, int Loaded, int? Expected) CatchUpProgress
    {
        get
        {
            lock (_gate)
            {
                return (_caughtUp, _expected?.Count(_packages.ContainsKey) ?? 0, _expected?.Count);
            }
        }
    }

    /// <summary>The deployed packages.</summary>
    public IReadOnlyList<ComponentPackage> All
    {
        get
        {
            lock (_gate)
            {
                return [.. _packages.Values];
            }
        }
    }

    /// <summary>Adds a loaded package, unless its name or one of its contracts is deployed already.</summary>
    /// <returns>Null once added; otherwise why not, changing nothing.</returns>
    public string? TryAdd(ComponentPackage package)
    {
        lock (_gate)
        {
            string? conflict = _packages.ContainsKey(package.Name)
                ? $"A package named {package.Name} is already deployed; undeploy it first."
                : package.Classes.SelectMany(c => c.Contracts).Where(c => _services.ContainsKey(c.ServiceName))
                    .Select(c => $"Contract {c.ServiceName} is already served by {_services[c.ServiceName].Class.Name}.").FirstOrDefault();
            if (conflict is not null)
            {
                return conflict;
            }

            _packages[package.Name] = package;
            foreach (var componentClass in package.Classes)
            {
                _classes[componentClass.Name] = componentClass;
                foreach (var contract in componentClass.Contracts)
                {
                    _services[contract.ServiceName] = (componentClass, contract);
                }
            }

            return null;
        }
    }

    /// <summary>Takes a package out, with its classes and contracts; false when no such package is deployed.</summary>
    public bool TryRemove(string name, [System.Diagnostics.CodeAnalysis.MaybeNullWhen(false)] out ComponentPackage package)
    {
        lock (_gate)
        {
            if (!_packages.Remove(name, out package))
            {
                return false;
            }

            foreach (var contract in package.Classes.SelectMany(c => c.Contracts))
            {
                _services.Remove(contract.ServiceName);
            }

            foreach (var componentClass in package.Classes)
            {
                _classes.Remove(componentClass.Name);
            }

            return true;
        }
    }

    /// <summary>A deployed class by name, or null.</summary>
    public ComponentClass? FindClass(string name)
    {
        lock (_gate)
        {
            return _classes.GetValueOrDefault(name);
        }
    }

    /// <summary>The class serving <paramref name="contract"/>, or null.</summary>
    public ComponentClass? ClassServing(string contract)
    {
        lock (_gate)
        {
            return _services.TryGetValue(contract, out var served) ? served.Class : null;
        }
    }

    /// <summary>The class serving <paramref name="service"/> and its contract; otherwise false, with the contracts served.</summary>
    public bool TryResolve(string service, out (ComponentClass Class, ComponentContract Contract) served, out IReadOnlyList<string> deployed)
    {
        lock (_gate)
        {
            if (_services.TryGetValue(service, out served))
            {
                deployed = [];
                return true;
            }

            deployed = [.. _services.Keys.Order(StringComparer.Ordinal)];
            return false;
        }
    }

    /// <summary>The deployed package a class belongs to, or null once it was undeployed.</summary>
    public ComponentPackage? PackageOf(ComponentClass componentClass)
    {
        lock (_gate)
        {
            return _packages.Values.FirstOrDefault(p => p.Classes.Contains(componentClass));
        }
    }
}
