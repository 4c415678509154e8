namespace Quintet.Client;

/// <summary>
/// What a <see cref="QuintetClient"/> has done since it connected, for diagnostics and tests: how many calls went
/// straight to the manager owning their instance and how many took a hop through another one. A snapshot; take two
/// and subtract to look at a stretch of calls.
/// </summary>
/// <param name="Calls">Calls made through the client's proxies (each counted once, however many attempts it took).</param>
/// <param name="DirectAttempts">
/// Attempts sent straight to the manager the client had learned owns their instance (from <c>quintet-served-by</c>,
/// or because that manager served an earlier call for the same contract and key itself).
/// </param>
/// <param name="ForwardedCalls">
/// Calls the manager called passed on to the instance's owner, as it said in <c>quintet-served-by</c>: each took an
/// extra hop, and taught the client the owner for the next call.
/// </param>
/// <param name="Retries">Attempts made again, on the next manager, after one failed with <c>UNAVAILABLE</c>.</param>
/// <param name="Routes">Routes (contract and key to an owning manager) the client knows now.</param>
public sealed record QuintetClientStatistics(long Calls, long DirectAttempts, long ForwardedCalls, long Retries, int Routes);
