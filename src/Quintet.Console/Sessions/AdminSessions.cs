using System.Collections.Concurrent;
using System.Security.Cryptography;
using Microsoft.Extensions.Options;
using Quintet.Console.Hosting;

namespace Quintet.Console.Sessions;

/// <summary>The signed-in users' sessions, in memory, each ended after it has been idle too long or its credential expired.</summary>
public sealed class AdminSessions : IDisposable
{
    private readonly ConcurrentDictionary<string, AdminSession> _sessions = new(StringComparer.Ordinal);
    private readonly TimeSpan _idle;
    private readonly TimeProvider _time;

    /// <summary>Sessions ended after <see cref="ConsoleOptions.SessionIdleTimeout"/>.</summary>
    public AdminSessions(IOptions<ConsoleOptions> options, TimeProvider time)
    {
        _idle = options.Value.SessionIdleTimeout;
        _time = time;
    }

    /// <summary>A new, unguessable session id.</summary>
    public static string NewId() => Convert.ToHexString(RandomNumberGenerator.GetBytes(32));

    /// <summary>Keeps <paramref name="session"/> and ends the sessions that ran out.</summary>
    public void Add(AdminSession session)
    {
        ArgumentNullException.ThrowIfNull(session);
        Sweep();
        _sessions[session.Id] = session;
    }

    /// <summary>The live session of that id, marked as used now; null if there is none (signed out, expired, or the console restarted).</summary>
    public AdminSession? Find(string? id)
    {
        if (id is null || !_sessions.TryGetValue(id, out var session))
        {
            return null;
        }

        var now = _time.GetUtcNow();
        if (now - session.LastUsed > _idle || session.Expires < now)
        {
            Remove(id);
            return null;
        }

        session.LastUsed = now;
        return session;
    }

    /// <summary>Ends the session of that id, closing its channels.</summary>
    public void Remove(string id)
    {
        if (_sessions.TryRemove(id, out var session))
        {
            session.Dispose();
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var id in _sessions.Keys)
        {
            Remove(id);
        }
    }

    private void Sweep()
    {
        var now = _time.GetUtcNow();
        foreach (var (id, session) in _sessions)
        {
            if (now - session.LastUsed > _idle || session.Expires < now)
            {
                Remove(id);
            }
        }
    }
}
