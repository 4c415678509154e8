using System.Globalization;

namespace Quintet.Manager.Isolation;

/// <summary>
/// The command line of an isolated worker: <c>worker --package DIR --data DIR --parent PID --endpoint SOCKET [--manager NAME]</c>.
/// The manager writes it (<see cref="ToArguments"/>) and the worker reads it back (<see cref="Parse"/>): both ends live in
/// this one type so that they cannot drift apart.
/// </summary>
internal sealed record WorkerArguments(string PackageDirectory, string DataDirectory, int ParentProcessId, string Endpoint, string ManagerName)
{
    /// <summary>The first argument that makes the manager executable run as an isolated worker.</summary>
    public const string Command = "worker";

    /// <summary>The line a worker writes on its standard output once it serves calls; its endpoint follows it.</summary>
    public const string ReadyPrefix = "QUINTET-WORKER-READY ";

    /// <summary>True when <paramref name="args"/> asks for a worker rather than a manager.</summary>
    public static bool IsWorkerCommand(IReadOnlyList<string> args) => args.Count > 0 && args[0] == Command;

    /// <summary>The arguments that start a worker, <see cref="Command"/> first.</summary>
    public IReadOnlyList<string> ToArguments() =>
    [
        Command,
        "--package", PackageDirectory,
        "--data", DataDirectory,
        "--parent", ParentProcessId.ToString(CultureInfo.InvariantCulture),
        "--endpoint", Endpoint,
        "--manager", ManagerName,
    ];

    /// <summary>Reads a worker's command line (with or without the leading <see cref="Command"/>).</summary>
    /// <exception cref="FormatException">An option is unknown, repeated, missing its value or malformed, or a required one is absent.</exception>
    public static WorkerArguments Parse(IReadOnlyList<string> args)
    {
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (var i = IsWorkerCommand(args) ? 1 : 0; i < args.Count; i += 2)
        {
            var option = args[i];
            if (option is not ("--package" or "--data" or "--parent" or "--endpoint" or "--manager"))
            {
                throw new FormatException($"unknown worker option '{option}'; the options are --package, --data, --parent, --endpoint and --manager.");
            }

            if (i + 1 >= args.Count)
            {
                throw new FormatException($"worker option {option} needs a value.");
            }

            if (!values.TryAdd(option, args[i + 1]))
            {
                throw new FormatException($"worker option {option} is given twice.");
            }
        }

        string Required(string option) =>
            values.TryGetValue(option, out var value) && !string.IsNullOrWhiteSpace(value) ? value : throw new FormatException($"worker option {option} is required.");

        int Number(string option, string text, int min, int max) =>
            int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out var n) && n >= min && n <= max
                ? n
                : throw new FormatException($"worker option {option} must be a number from {min} to {max}, was '{text}'.");

        return new WorkerArguments(
            Path.GetFullPath(Required("--package")),
            Path.GetFullPath(Required("--data")),
            Number("--parent", Required("--parent"), 1, int.MaxValue),
            Required("--endpoint"),
            values.GetValueOrDefault("--manager") ?? Environment.MachineName);
    }
}
