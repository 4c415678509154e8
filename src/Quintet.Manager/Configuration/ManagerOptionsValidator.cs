using System.Net;
using Microsoft.Extensions.Options;

namespace Quintet.Manager.Configuration;

/// <summary>Checks <see cref="ManagerOptions"/> at start, naming the setting in every failure.</summary>
public sealed class ManagerOptionsValidator : IValidateOptions<ManagerOptions>
{
    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, ManagerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        const string S = ManagerOptions.SectionName;
        var failures = new List<string>();

        if (options.GrpcHost is { } host && !IsListenableHost(host))
        {
            failures.Add($"{S}:GrpcHost: '{host}' must be an IP address or 'localhost'.");
        }

        if (options.GrpcPort is < 0 or > 65535)
        {
            failures.Add($"{S}:GrpcPort: {options.GrpcPort} is outside 0-65535 (0 picks a free port).");
        }

        if (options.ReportTimeout <= TimeSpan.Zero || options.ReportTimeout > TimeSpan.FromMinutes(1))
        {
            failures.Add($"{S}:ReportTimeout: {options.ReportTimeout} must be positive and at most a minute.");
        }

        if (options.ParentProcessId is <= 0)
        {
            failures.Add($"{S}:ParentProcessId: {options.ParentProcessId} is not a process id.");
        }

        if (options.EndpointFile is { } file && (string.IsNullOrWhiteSpace(file) || file.IndexOfAny(Path.GetInvalidPathChars()) >= 0))
        {
            failures.Add($"{S}:EndpointFile: '{file}' is not a valid path.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    /// <summary>True for an IP address or <c>localhost</c>: what the gRPC endpoint can listen on.</summary>
    public static bool IsListenableHost(string host) =>
        IPAddress.TryParse(host, out _) || string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase);
}
