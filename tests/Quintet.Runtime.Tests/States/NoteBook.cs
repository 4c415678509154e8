using System.Text;
using Quintet.Components;
using Quintet.Runtime.States;

namespace Quintet.Runtime.Tests.States;

/// <summary>A test component's state: a set of notes, exported as lines; merging takes the union. Its turn is a semaphore.</summary>
internal sealed class NoteBook(bool merges = false) : IMigrateState, IMergeState, IDisposable
{
    private readonly SemaphoreSlim _turn = new(1, 1);
    private SortedSet<string> _notes = new(StringComparer.Ordinal);

    public int Imports { get; private set; }

    public int Merges { get; private set; }

    public InTurn InTurn => async work =>
    {
        await _turn.WaitAsync();
        try
        {
            await work(CancellationToken.None);
        }
        finally
        {
            _turn.Release();
        }
    };

    public async Task<T> InTurnAsync<T>(Func<NoteBook, T> read)
    {
        await _turn.WaitAsync();
        try
        {
            return read(this);
        }
        finally
        {
            _turn.Release();
        }
    }

    public Task AddAsync(string note) => InTurnAsync(b => b._notes.Add(note));

    public Task<string> ReadAsync() => InTurnAsync(b => string.Join(",", b._notes));

    public Task<byte[]> ExportStateAsync(CancellationToken cancellationToken) => Task.FromResult(Encoding.UTF8.GetBytes(string.Join("\n", _notes)));

    public Task ImportStateAsync(ReadOnlyMemory<byte> state, CancellationToken cancellationToken)
    {
        _notes = new SortedSet<string>(Parse(state), StringComparer.Ordinal);
        Imports++;
        return Task.CompletedTask;
    }

    public Task MergeStateAsync(ReadOnlyMemory<byte> incoming, GroupMember from, CancellationToken cancellationToken)
    {
        if (!merges)
        {
            return ImportStateAsync(incoming, cancellationToken);
        }

        _notes.UnionWith(Parse(incoming));
        Merges++;
        return Task.CompletedTask;
    }

    public void Dispose() => _turn.Dispose();

    private static string[] Parse(ReadOnlyMemory<byte> state) =>
        Encoding.UTF8.GetString(state.Span).Split('\n', StringSplitOptions.RemoveEmptyEntries);
}
