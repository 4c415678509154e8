namespace Quintet.Persistence;

/// <summary>
/// A checkpoint store that every manager sees alike (the replicated store, a shared database): an instance that moves to
/// another manager finds its stream there, so a migration neither copies nor deletes the stream. A store of one
/// manager's own must not implement it.
/// </summary>
public interface IClusterCheckpointStore : ICheckpointStore
{
}
