using System.Diagnostics;
using System.Globalization;
using System.Numerics;
using System.Text;

namespace Quintet.TestingHost.Checking;

/// <summary>
/// The search for one key. Every operation has two entries, its call and its return, in a doubly linked list in history
/// order (returns of operations that may never have happened go last). The calls before the first return are the
/// candidates to take effect next; placing one lifts it out of the list with its return and pushes it on a stack.
/// Reaching a return means that operation had to be placed already: the search backtracks by popping the last choice
/// and trying the next candidate (Wing and Gong). Lowe's memo of (placed set, state) configurations keeps it from
/// exploring a configuration twice. Two refinements order the choices: a read-only candidate that is possible is placed
/// without branching, and the operation whose return comes first is tried before the others.
/// </summary>
internal sealed class LinearizabilitySearch<TState, TOperation>
{
    // How many steps between looks at the clock and the cancellation token: often enough to stop within milliseconds.
    private const long BudgetCheckInterval = 4096;

    private readonly IModel<TState, TOperation> _model;
    private readonly KeyHistory<TOperation> _history;
    private readonly long _maxSteps;
    private readonly long _deadline;
    private readonly CancellationToken _cancellationToken;

    // The linked list: entry 2i is the call of operation i, 2i + 1 its return; _head is the sentinel.
    private readonly int[] _next;
    private readonly int[] _prev;
    private readonly int _head;

    // The search's position: the operations placed (a set and a stack), and the state they lead to.
    private readonly HashSet<Configuration> _cache;
    private readonly ulong[] _linearized;
    private readonly int[] _bit;
    private readonly int _completedWords;
    private readonly ulong[] _scratch;
    private readonly ulong[] _codes;
    private readonly bool[] _readOnly;
    private readonly int[] _stackEntries;
    private readonly TState[] _stackStates;
    private readonly bool[] _stackForced;
    private ulong _hash;
    private int _depth;
    private TState _state;
    private long _steps;
    private long _nextBudgetCheck = BudgetCheckInterval;

    // The best (longest) prefix found, for the explanation of a failure.
    private int[] _bestPrefix = [];
    private TState _bestState;
    private int _bestBlocking = -1;
    private int[] _bestCandidates = [];

    public LinearizabilitySearch(IModel<TState, TOperation> model, KeyHistory<TOperation> history, long maxSteps, long deadline, CancellationToken cancellationToken)
    {
        _model = model;
        _history = history;
        _maxSteps = maxSteps;
        _deadline = deadline;
        _cancellationToken = cancellationToken;
        _bestState = model.Initial;
        _state = model.Initial;

        var n = history.Operations.Count;
        _cache = new HashSet<Configuration>(new ConfigurationComparer(model.StateComparer));

        // The set of placed operations has a region for the operations that completed, in invocation order, and one for
        // those that may never have happened. The first fills up from the bottom as the search advances, so a
        // configuration is remembered by the part of it that is neither all ones nor all zeros (see Compact).
        _bit = new int[n];
        var completed = history.Completed.Count(c => c != long.MaxValue);
        _completedWords = (completed + 63) / 64;
        for (int i = 0, ok = 0, open = 0; i < n; i++)
        {
            _bit[i] = history.Completed[i] != long.MaxValue ? ok++ : (_completedWords * 64) + open++;
        }

        _linearized = new ulong[_completedWords + ((n - completed + 63) / 64)];
        _scratch = new ulong[1 + _linearized.Length];
        _stackEntries = new int[n];
        _stackStates = new TState[n];
        _stackForced = new bool[n];
        _readOnly = new bool[n];
        for (var i = 0; i < n; i++)
        {
            _readOnly[i] = model.IsReadOnly(history.Prepared[i]);
        }

        // Zobrist hashing: the hash of a set is the XOR of its members' random codes, updated in O(1) per change.
        _codes = new ulong[n];
        var random = new Random(n);
        for (var i = 0; i < n; i++)
        {
            _codes[i] = (ulong)random.NextInt64() ^ ((ulong)random.NextInt64() << 1);
        }

        var order = new (long Position, int Entry)[2 * n];
        for (var i = 0; i < n; i++)
        {
            order[2 * i] = (history.Invoked[i], 2 * i);

            // Returns of operations that may never have happened share the position "never": keep them in operation order.
            order[(2 * i) + 1] = (history.Completed[i] == long.MaxValue ? long.MaxValue - n + i : history.Completed[i], (2 * i) + 1);
        }

        Array.Sort(order);
        _head = 2 * n;
        _next = new int[(2 * n) + 1];
        _prev = new int[(2 * n) + 1];
        var last = _head;
        foreach (var (_, entry) in order)
        {
            _next[last] = entry;
            _prev[entry] = last;
            last = entry;
        }

        _next[last] = -1;
    }

    public KeyLinearizability Run()
    {
        var entry = -1;
        var blocking = -1;
        var arrived = true;
        while (true)
        {
            if (_steps >= _nextBudgetCheck)
            {
                _nextBudgetCheck += BudgetCheckInterval;
                if (OverBudget() is { } reason)
                {
                    return Unknown(reason);
                }
            }

            var dead = false;
            if (arrived)
            {
                arrived = false;
                var forced = PlaceReadOnly();
                if (forced is not null)
                {
                    arrived = forced.Value;
                    dead = !forced.Value;
                    if (arrived)
                    {
                        continue;
                    }
                }
                else
                {
                    // The list is empty, or everything before its first return may never have happened: done.
                    var first = FirstReturn();
                    if (first < 0 || _history.Completed[first >> 1] == long.MaxValue)
                    {
                        return Linearizable();
                    }

                    // Try first the operation whose return comes first: it must be placed before the search may pass
                    // its return, and placing operations as late as they can go (Lowe's just-in-time linearization)
                    // keeps the others free for the reads that follow.
                    blocking = first - 1;
                    if (TryPlace(blocking))
                    {
                        arrived = true;
                        continue;
                    }

                    entry = _next[_head];
                }
            }

            if (!dead)
            {
                for (; (entry & 1) == 0; entry = _next[entry])
                {
                    if (entry != blocking && TryPlace(entry))
                    {
                        arrived = true;
                        break;
                    }
                }

                if (arrived)
                {
                    continue;
                }

                // The return of the blocking operation: every candidate before it has been tried.
                if (_bestBlocking < 0 || _depth > _bestPrefix.Length)
                {
                    Remember(entry);
                }
            }

            // Undo the last choice and try the next candidate; undo forced placements without looking further.
            int call;
            bool wasForced;
            do
            {
                if (_depth == 0)
                {
                    return NotLinearizable();
                }

                (call, wasForced) = Pop();
            }
            while (wasForced);

            blocking = FirstReturn() - 1;
            entry = call == blocking ? _next[_head] : _next[call];
        }
    }

    /// <summary>
    /// Places a read-only operation that is possible now. It may as well go now: in any linearization from here it
    /// could be moved to this point, since it changes nothing and nothing that must come before it is still to be
    /// placed. So it is not a choice, and failing after it means failing here.
    /// </summary>
    /// <returns>Null when there is none; true when one was placed; false when placing it leads to a configuration
    /// already explored, so that this one fails too.</returns>
    private bool? PlaceReadOnly()
    {
        for (var e = _next[_head]; e >= 0 && (e & 1) == 0; e = _next[e])
        {
            var op = e >> 1;
            if (!_readOnly[op])
            {
                continue;
            }

            _steps++;
            if (_model.Apply(_state, _history.Prepared[op], out var after))
            {
                return TryPush(e, after, forced: true);
            }
        }

        return null;
    }

    /// <summary>Places an operation that changes the state next, if the model allows it and the configuration it leads
    /// to is new.</summary>
    private bool TryPlace(int call)
    {
        var op = call >> 1;
        if (_readOnly[op])
        {
            // PlaceReadOnly has placed it if it can go here.
            return false;
        }

        _steps++;
        return _model.Apply(_state, _history.Prepared[op], out var after) && TryPush(call, after, forced: false);
    }

    private int FirstReturn()
    {
        var e = _next[_head];
        while (e >= 0 && (e & 1) == 0)
        {
            e = _next[e];
        }

        return e;
    }

    /// <summary>Places an operation next, unless the configuration it leads to has been explored already.</summary>
    private bool TryPush(int call, TState after, bool forced)
    {
        var op = call >> 1;
        Flip(op);
        var length = Compact();
        var probe = new Configuration(_scratch, length, _hash, after);
        if (_cache.Contains(probe))
        {
            Flip(op);
            return false;
        }

        _cache.Add(probe with { Set = _scratch.AsSpan(0, length).ToArray() });
        _stackEntries[_depth] = call;
        _stackStates[_depth] = _state;
        _stackForced[_depth] = forced;
        _depth++;
        _state = after;
        Lift(call);
        return true;
    }

    private void Flip(int op)
    {
        var bit = _bit[op];
        _linearized[bit >> 6] ^= 1UL << (bit & 63);
        _hash ^= _codes[op];
    }

    /// <summary>
    /// Writes the placed set into <see cref="_scratch"/> in a canonical short form: the index of the first word of the
    /// completed region that is not all ones, the words from there to the last that is not zero, and the region of
    /// operations that may never have happened. Without it, every configuration of a long history would cost a bit per
    /// operation of the history.
    /// </summary>
    /// <returns>How many words it takes.</returns>
    private int Compact()
    {
        var low = 0;
        while (low < _completedWords && _linearized[low] == ulong.MaxValue)
        {
            low++;
        }

        var high = _completedWords - 1;
        while (high >= low && _linearized[high] == 0)
        {
            high--;
        }

        _scratch[0] = (ulong)low;
        var length = 1;
        for (var w = low; w <= high; w++)
        {
            _scratch[length++] = _linearized[w];
        }

        for (var w = _completedWords; w < _linearized.Length; w++)
        {
            _scratch[length++] = _linearized[w];
        }

        return length;
    }

    private (int Call, bool Forced) Pop()
    {
        _depth--;
        var call = _stackEntries[_depth];
        _state = _stackStates[_depth];
        Flip(call >> 1);
        Unlift(call);
        return (call, _stackForced[_depth]);
    }

    private string? OverBudget()
    {
        _cancellationToken.ThrowIfCancellationRequested();
        if (_steps >= _maxSteps)
        {
            return string.Create(CultureInfo.InvariantCulture, $"the search used its budget of {_maxSteps} steps");
        }

        return Stopwatch.GetTimestamp() > _deadline ? "the check ran out of time" : null;
    }

    private void Lift(int call)
    {
        var ret = call + 1;
        _next[_prev[call]] = _next[call];
        _prev[_next[call]] = _prev[call];
        _next[_prev[ret]] = _next[ret];
        if (_next[ret] >= 0)
        {
            _prev[_next[ret]] = _prev[ret];
        }
    }

    private void Unlift(int call)
    {
        // The reverse of Lift: the lifted entries still point at their old neighbours.
        var ret = call + 1;
        _next[_prev[ret]] = ret;
        if (_next[ret] >= 0)
        {
            _prev[_next[ret]] = ret;
        }

        _next[_prev[call]] = call;
        _prev[_next[call]] = call;
    }

    private void Remember(int blockingReturn)
    {
        _bestPrefix = _stackEntries.AsSpan(0, _depth).ToArray();
        _bestState = _state;
        _bestBlocking = blockingReturn >> 1;
        var candidates = new List<int>();
        for (var e = _next[_head]; e != blockingReturn; e = _next[e])
        {
            if ((e & 1) == 0)
            {
                candidates.Add(e >> 1);
            }
        }

        _bestCandidates = [.. candidates];
    }

    private List<HistoryOperation> Operations(ReadOnlySpan<int> entries)
    {
        var operations = new List<HistoryOperation>(entries.Length);
        foreach (var e in entries)
        {
            operations.Add(_history.Operations[e >> 1]);
        }

        return operations;
    }

    private KeyLinearizability Linearizable() =>
        new(_history.Key, LinearizabilityOutcome.Linearizable, _history.Operations.Count, _steps,
            Operations(_stackEntries.AsSpan(0, _depth)), _model.Describe(_state), null, [], null);

    private KeyLinearizability Unknown(string reason)
    {
        var text = string.Create(
            CultureInfo.InvariantCulture,
            $"Key {KeyLinearizability.KeyName(_history.Key)}: unknown; {reason} ({_history.Operations.Count} operations, {_steps} steps, longest linearizable prefix so far {_bestPrefix.Length}).");
        return new KeyLinearizability(_history.Key, LinearizabilityOutcome.Unknown, _history.Operations.Count, _steps, Operations(_bestPrefix), _model.Describe(_bestState), null, [], text);
    }

    private KeyLinearizability NotLinearizable()
    {
        var prefix = new List<HistoryOperation>(_bestPrefix.Length);
        foreach (var e in _bestPrefix)
        {
            prefix.Add(_history.Operations[e >> 1]);
        }

        var unplaced = new List<UnplacedOperation>(_bestCandidates.Length);
        foreach (var op in _bestCandidates)
        {
            unplaced.Add(new UnplacedOperation(_history.Operations[op], _model.Apply(_bestState, _history.Prepared[op], out _)));
        }

        var blocking = _history.Operations[_bestBlocking];
        var state = _model.Describe(_bestState);
        var text = new StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"Key {KeyLinearizability.KeyName(_history.Key)}: not linearizable ({_history.Operations.Count} operations, {_steps} steps).");
        text.AppendLine().Append(CultureInfo.InvariantCulture, $"  The longest linearizable prefix has {prefix.Count} operations and leaves the state {state}");
        const int Shown = 8;
        if (prefix.Count == 0)
        {
            text.Append('.');
        }
        else
        {
            text.Append(prefix.Count > Shown ? string.Create(CultureInfo.InvariantCulture, $"; its last {Shown}:") : ":");
            foreach (var op in prefix.Skip(Math.Max(0, prefix.Count - Shown)))
            {
                text.AppendLine().Append("    ").Append(op);
            }
        }

        text.AppendLine().Append(CultureInfo.InvariantCulture, $"  Then {blocking} had completed, so it or an operation concurrent with it had to come next, and none can:");
        foreach (var u in unplaced)
        {
            text.AppendLine().Append("    ").Append(u.Operation).Append(u.AllowedByModel
                ? string.Create(CultureInfo.InvariantCulture, $": possible in state {state}, but nothing that must follow it is")
                : string.Create(CultureInfo.InvariantCulture, $": impossible in state {state}"));
        }

        return new KeyLinearizability(_history.Key, LinearizabilityOutcome.NotLinearizable, _history.Operations.Count, _steps, prefix, state, blocking, unplaced, text.ToString());
    }

    /// <summary>A configuration the search has been in: which operations are linearized, and the state they lead to.</summary>
    /// <param name="Set">The placed set in the form <see cref="Compact"/> writes; a probe borrows the scratch buffer.</param>
    /// <param name="Length">How many words of <paramref name="Set"/> are used.</param>
    /// <param name="Hash">The set's Zobrist hash.</param>
    /// <param name="State">The state.</param>
    private readonly record struct Configuration(ulong[] Set, int Length, ulong Hash, TState State);

    private sealed class ConfigurationComparer(IEqualityComparer<TState> states) : IEqualityComparer<Configuration>
    {
        public bool Equals(Configuration x, Configuration y) =>
            x.Hash == y.Hash && states.Equals(x.State, y.State) && x.Set.AsSpan(0, x.Length).SequenceEqual(y.Set.AsSpan(0, y.Length));

        public int GetHashCode(Configuration obj) =>
            (int)BitOperations.Crc32C((uint)obj.Hash ^ (uint)(obj.Hash >> 32), (uint)(obj.State is null ? 0 : states.GetHashCode(obj.State)));
    }
}
