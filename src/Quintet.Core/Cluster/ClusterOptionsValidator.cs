using Microsoft.Extensions.Options;
using Quintet.Security;

namespace Quintet.Core.Cluster;

/// <summary>Checks <see cref="ClusterOptions"/> at start, naming the setting in every failure.</summary>
/// <param name="security">This manager's security: seeds given as full addresses must use the protocol it implies
/// (<c>akka.ssl.tcp</c> with TLS). <see cref="ClusterSecurity.Open"/> when null.</param>
public sealed class ClusterOptionsValidator(ClusterSecurity? security = null) : IValidateOptions<ClusterOptions>
{
    private readonly bool _secure = security?.Enabled ?? false;

    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, ClusterOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        const string S = ClusterOptions.SectionName;
        var failures = new List<string>();

        if (!ClusterAddress.IsValidClusterName(options.Name))
        {
            failures.Add($"{S}:Name: '{options.Name}' is not a valid cluster name; use letters, digits, '-' and '_', starting with a letter or digit.");
        }

        if (!ClusterAddress.IsValidHost(options.Host))
        {
            failures.Add($"{S}:Host: '{options.Host}' is neither an IP address nor a host name.");
        }

        if (options.Port is < 0 or > 65535)
        {
            failures.Add($"{S}:Port: {options.Port} is outside 0-65535 (0 picks a free port).");
        }

        if (options.GroupPort is < 0 or > 65535)
        {
            failures.Add($"{S}:GroupPort: {options.GroupPort} is outside 0-65535 (0 picks a free port).");
        }
        else if (options.GroupPort != 0 && options.GroupPort == options.Port)
        {
            failures.Add($"{S}:GroupPort: {options.GroupPort} is also {S}:Port; the group transport needs a port of its own (or 0 for a free one).");
        }

        if (!Enum.IsDefined(options.GroupTransport))
        {
            failures.Add($"{S}:GroupTransport: '{options.GroupTransport}' is not a transport; use Direct or Remoting.");
        }

        for (var i = 0; i < options.Seeds.Count; i++)
        {
            if (!ClusterAddress.TryParseSeed(options.Seeds[i], options.Name ?? string.Empty, _secure, out _, out var error))
            {
                failures.Add($"{S}:Seeds:{i}: {error}.");
            }
        }

        var fd = options.FailureDetector;
        if (fd.HeartbeatInterval <= TimeSpan.Zero)
        {
            failures.Add($"{S}:FailureDetector:HeartbeatInterval: must be positive (for example 00:00:00.500).");
        }

        if (fd.AcceptableHeartbeatPause < fd.HeartbeatInterval)
        {
            failures.Add($"{S}:FailureDetector:AcceptableHeartbeatPause: {fd.AcceptableHeartbeatPause} is shorter than HeartbeatInterval ({fd.HeartbeatInterval}); every missed heartbeat would be a suspicion.");
        }

        if (!(fd.Threshold > 0) || double.IsInfinity(fd.Threshold))
        {
            failures.Add($"{S}:FailureDetector:Threshold: {fd.Threshold} must be a positive number (default 8).");
        }

        if (!Enum.IsDefined(fd.ProcessDeathEvidence))
        {
            failures.Add($"{S}:FailureDetector:ProcessDeathEvidence: '{fd.ProcessDeathEvidence}' is not a choice; use SameHost, AnyHost or Off.");
        }

        if (options.Downing.StableAfter <= TimeSpan.Zero)
        {
            failures.Add($"{S}:Downing:StableAfter: must be positive (for example 00:00:03).");
        }

        if (options.Downing.Managers is < 0 or > 1000)
        {
            failures.Add($"{S}:Downing:Managers: {options.Downing.Managers} is not a cluster size; use 0 (keep the majority of the current members) or the number of managers the cluster is planned to have, 1 to 1000.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
