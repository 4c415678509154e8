using System.Text.Json.Serialization;

namespace Quintet.Cli.Configuration;

/// <summary>
/// The saved contexts, kubeconfig style: each names a cluster's endpoint and the credentials to present to it, and one
/// of them is current. Kept in the configuration file (<see cref="CliConfigFile"/>).
/// </summary>
internal sealed class CliConfig
{
    /// <summary>The context commands use when neither <c>--context</c> nor <c>QUINTET_CONTEXT</c> names one; null for none.</summary>
    public string? CurrentContext { get; set; }

    /// <summary>The contexts by name, in name order.</summary>
    public SortedDictionary<string, SavedContext> Contexts { get; set; } = new(StringComparer.Ordinal);
}

/// <summary>One saved context: a manager's endpoint and the credentials for it. Paths are absolute.</summary>
internal sealed class SavedContext
{
    /// <summary>The gRPC endpoint of any manager of the cluster.</summary>
    public string Endpoint { get; set; } = "";

    /// <summary>The PEM file of the cluster's CAs.</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)]
    public string? Ca { get; set; }

    /// <summary>The client certificate's PEM file.</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)]
    public string? Cert { get; set; }

    /// <summary>The client certificate's key file.</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)]
    public string? Key { get; set; }

    /// <summary>A file holding a bearer token, read at every command (so a renewed token needs no new context).</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)]
    public string? TokenFile { get; set; }
}
