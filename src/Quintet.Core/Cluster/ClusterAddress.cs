using System.Globalization;
using System.Net;
using System.Text.RegularExpressions;
using Akka.Actor;

namespace Quintet.Core.Cluster;

/// <summary>Parses and validates the addresses that appear in cluster configuration.</summary>
public static partial class ClusterAddress
{
    /// <summary>The transport protocol of a cluster address when security is off.</summary>
    public const string Protocol = "akka.tcp";

    /// <summary>The transport protocol of a cluster address when the cluster port uses TLS (security on).</summary>
    public const string SecureProtocol = "akka.ssl.tcp";

    /// <summary>The protocol of this manager's cluster addresses: <see cref="SecureProtocol"/> when its channels use TLS.</summary>
    public static string ProtocolFor(bool secure) => secure ? SecureProtocol : Protocol;

    private const string SecurityOptionsSection = Quintet.Security.SecurityOptions.SectionName;

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
    /// Parses a seed given as <c>host:port</c> or as a full <c>akka.tcp://name@host:port</c> address, for a manager
    /// whose security is off.
    /// </summary>
    /// <param name="value">The text from configuration.</param>
    /// <param name="clusterName">This manager's cluster name; a full address must name the same cluster.</param>
    /// <param name="address">The parsed address.</param>
    /// <param name="error">Why the text is not a valid seed, phrased to follow the setting's name.</param>
    public static bool TryParseSeed(string? value, string clusterName, out Address? address, out string? error) =>
        TryParseSeed(value, clusterName, secure: false, out address, out error);

    /// <summary>
    /// Parses a seed given as <c>host:port</c> or as a full address (<c>akka.tcp://name@host:port</c>, or
    /// <c>akka.ssl.tcp://name@host:port</c> when <paramref name="secure"/>), into an address of this manager's protocol.
    /// </summary>
    /// <param name="value">The text from configuration.</param>
    /// <param name="clusterName">This manager's cluster name; a full address must name the same cluster.</param>
    /// <param name="secure">Whether this manager's cluster port uses TLS (security on): seeds must then too.</param>
    /// <param name="address">The parsed address.</param>
    /// <param name="error">Why the text is not a valid seed, phrased to follow the setting's name.</param>
    public static bool TryParseSeed(string? value, string clusterName, bool secure, out Address? address, out string? error)
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
        var protocol = ProtocolFor(secure);
        if (text.Contains("://", StringComparison.Ordinal))
        {
            var prefix = protocol + "://";
            if (!text.StartsWith(prefix, StringComparison.Ordinal))
            {
                var other = ProtocolFor(!secure) + "://";
                error = !text.StartsWith(other, StringComparison.Ordinal)
                    ? $"'{value}' uses an unknown protocol; use host:port or {prefix}{clusterName}@host:port"
                    : secure
                        ? $"'{value}' is a plaintext address, but this manager's cluster port uses TLS ({SecurityOptionsSection} is set); use host:port or {prefix}{clusterName}@host:port"
                        : $"'{value}' is a TLS address, but this manager's security is off; use host:port or {prefix}{clusterName}@host:port, or set {SecurityOptionsSection} as the other managers do";
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

        address = new Address(protocol, clusterName, host, port);
        return true;
    }
}
