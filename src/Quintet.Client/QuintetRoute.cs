namespace Quintet.Client;

/// <summary>A route a <see cref="QuintetClient"/> has learned: the manager that owns an instance, as the managers said.</summary>
/// <param name="Contract">The contract's service name, for example <c>samples.bank.Account</c>.</param>
/// <param name="Key">The instance's key.</param>
/// <param name="Endpoint">The gRPC endpoint of the manager owning the instance, for example <c>http://127.0.0.1:5054</c>.</param>
public sealed record QuintetRoute(string Contract, string Key, string Endpoint);
