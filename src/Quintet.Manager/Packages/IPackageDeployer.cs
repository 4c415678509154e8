namespace Quintet.Manager.Packages;

/// <summary>
/// What deploys a package on this manager and takes it away again, for <see cref="PackageReplicator"/>: loading a
/// package is the packages' business, but starting and stopping what serves its classes is the host's.
/// </summary>
internal interface IPackageDeployer
{
    /// <summary>Unzips, loads and registers a zipped package, refusing one that does not load or conflicts.</summary>
    /// <exception cref="PackageException">Refused; the message says why.</exception>
    Task<ComponentPackage> DeployZipAsync(ReadOnlyMemory<byte> zip, CancellationToken cancellationToken);

    /// <summary>Deactivates the package's instances, stops serving it and deletes its files; false when it is not deployed.</summary>
    Task<bool> UndeployAsync(string name, CancellationToken cancellationToken);
}
