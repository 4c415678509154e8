using System.Globalization;
using System.Net;
using System.Text.RegularExpressions;
using Akka.Actor;

namespace Quintet.Core.Cluster;

/// <summary>Parses and validates the addresses that appear in cluster configuration.</summary>
public static partial class ClusterAddress
{
    /// <summary>The transport protocol of every cluster address.</summary>
    public const string Protocol = "akka.tcp";

    [GeneratedRegex("^[A-Za-z0-9][A-Za-z0-9_-]*$")]
    private static partial Regex SystemNamePattern();

    [GeneratedRegex(@"^(?<host>\[[0-9A-Fa-f:.]+\]|[^:/@\s\[\]]+):(?<port>[0-9]{1,5})$")]
    private static partial Regex HostPortPattern();

    /// <summary>True when <paramref name="name"/> can serve as a cluster name.</summary>
    public static bool IsValidClusterName(string? name) => name is not null && SystemNamePattern().IsMatch(name);

    /// <summary>True when <paramref name="host"/> is an IP address or a syntactically valid host name.</summary>
    public static bool IsValidHost(string? host) =>
        !string.IsNullOrWhiteSpace(host)
        && (IPAddress.TryParse(host, out _) || Uri.CheckHostName(host) == UriHostNameType.Dns);

    /// <summary>
    /// Parses a seed given as <c>host:port</c> or as a full <c>akka.tcp://name@host:port</c> address.
    /// </summary>
    /// <param name="value">The text from configuration.</param>
    /// <param name="clusterName">This manager's cluster name; a full address must name the same cluster.</param>
    /// <param name="address">The parsed address.</param>
    /// <param name="error">Why the text is not a valid seed, phrased to follow the setting's name.</param>
    public static bool TryParseSeed(string? value, string clusterName, out Address? address, out string? error)
    {
        address = null;
        error = null;
        if (string.IsNullOrWhiteSpace(value))
        {
            error = "is empty; give a seed as host:port (for example 127.0.0.1:4053)";
            return false;
        }

        var text = value.Trim();
        var hostPort = text;
        if (text.Contains("://", StringComparison.Ordinal))
        {
            var prefix = Protocol + "://";
            if (!text.StartsWith(prefix, StringComparison.Ordinal))
            {
                error = $"'{value}' uses an unknown protocol; use host:port or {prefix}{clusterName}@host:port";
                return false;
            }

            var at = text.IndexOf('@', StringComparison.Ordinal);
            if (at < 0)
            {
                error = $"'{value}' has no '@'; use {prefix}{clusterName}@host:port";
                return false;
            }

            var system = text[prefix.Length..at];
            if (!string.Equals(system, clusterName, StringComparison.Ordinal))
            {
                error = $"'{value}' names cluster '{system}', but this manager's {ClusterOptions.SectionName}:Name is '{clusterName}'";
                return false;
            }

            hostPort = text[(at + 1)..].TrimEnd('/');
        }

        var match = HostPortPattern().Match(hostPort);
        if (!match.Success)
        {
            error = $"'{value}' is not host:port (for example 127.0.0.1:4053)";
            return false;
        }

        var host = match.Groups["host"].Value.Trim('[', ']');
        if (!IsValidHost(host))
        {
            error = $"'{value}' has an invalid host '{host}'";
            return false;
        }

        var port = int.Parse(match.Groups["port"].Value, CultureInfo.InvariantCulture);
        if (port is < 1 or > 65535)
        {
            error = $"'{value}' has port {port}, outside 1-65535";
            return false;
        }

        address = new Address(Protocol, clusterName, host, port);
        return true;
    }
}
