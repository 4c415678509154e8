namespace Quintet.Persistence;

/// <summary>Where component instances keep their checkpoints and logs: one stream per instance.</summary>
public interface ICheckpointStore
{
    /// <summary>
    /// The log of one stream. Opening reads and writes nothing; a stream exists once something is written to it.
    /// </summary>
    /// <param name="stream">The stream's name, for example <c>Bank.Account/acct-42</c> (the class and the instance key).</param>
    ICheckpointLog Open(string stream);
}
