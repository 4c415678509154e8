namespace Quintet.Console.Hosting;

/// <summary>The console's settings, section <c>Quintet:Console</c> (or the command-line switches in <see cref="SwitchMappings"/>).</summary>
public sealed class ConsoleOptions
{
    /// <summary>The configuration section.</summary>
    public const string Section = "Quintet:Console";

    /// <summary>The short command-line switches and the settings they set.</summary>
    public static IDictionary<string, string> SwitchMappings { get; } = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["--endpoints"] = $"{Section}:{nameof(Endpoints)}",
        ["--ca"] = $"{Section}:{nameof(CaFile)}",
        ["--listen"] = $"{Section}:{nameof(Listen)}",
        ["--https-cert"] = $"{Section}:{nameof(HttpsCertificateFile)}",
        ["--https-key"] = $"{Section}:{nameof(HttpsKeyFile)}",
    };

    /// <summary>The managers' gRPC endpoints, comma-separated, tried in this order (the console fails over to the next).</summary>
    /// <value><c>http://127.0.0.1:5053</c>, a manager with security off on this machine.</value>
    public string Endpoints { get; set; } = "http://127.0.0.1:5053";

    /// <summary>The PEM file of the cluster's CAs: managers must present a certificate from them. Null lets the platform check an https endpoint.</summary>
    /// <value>null.</value>
    public string? CaFile { get; set; }

    /// <summary>Where the console serves browsers: an https address on loopback unless a certificate is configured.</summary>
    /// <value><c>https://127.0.0.1:5080</c>.</value>
    public string Listen { get; set; } = "https://127.0.0.1:5080";

    /// <summary>The console's own HTTPS certificate (PEM); without it, a self-signed one for loopback is made at start.</summary>
    /// <value>null.</value>
    public string? HttpsCertificateFile { get; set; }

    /// <summary>The key of <see cref="HttpsCertificateFile"/> (PEM).</summary>
    /// <value>null.</value>
    public string? HttpsKeyFile { get; set; }

    /// <summary>How long a signed-in user may stay idle before signing in again (the credentials are forgotten then).</summary>
    /// <value>8 hours.</value>
    public TimeSpan SessionIdleTimeout { get; set; } = TimeSpan.FromHours(8);

    /// <summary>The deadline of a read (the tree, a page of instances, a log).</summary>
    /// <value>20 s: a manager that fell silent is given up on sooner by HTTP/2 pings (about 5 s).</value>
    public TimeSpan ReadTimeout { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>The deadline of an action (deploy, undeploy, QoS, migrate), above the managers' 15 s wait for the audit log.</summary>
    /// <value>120 s.</value>
    public TimeSpan ActionTimeout { get; set; } = TimeSpan.FromSeconds(120);

    /// <summary>The endpoints as URIs.</summary>
    /// <exception cref="InvalidOperationException">An endpoint is not an absolute http(s) address, or there is none.</exception>
    public IReadOnlyList<Uri> EndpointList()
    {
        var list = new List<Uri>();
        foreach (var text in Endpoints.Split([',', ';', ' '], StringSplitOptions.RemoveEmptyEntries))
        {
            if (!Uri.TryCreate(text, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
            {
                throw new InvalidOperationException($"{Section}:{nameof(Endpoints)} (--endpoints): '{text}' is not an http:// or https:// address of a manager's gRPC port (for example https://10.0.0.1:5053).");
            }

            list.Add(uri);
        }

        return list.Count > 0 ? list : throw new InvalidOperationException($"{Section}:{nameof(Endpoints)} (--endpoints) names no manager: give one or more gRPC endpoints, comma-separated.");
    }

    /// <summary>Whether the managers are reached over https: a secured cluster, where each user signs in with a credential.</summary>
    public bool SecuredCluster => EndpointList().Any(e => e.Scheme == Uri.UriSchemeHttps);
}
