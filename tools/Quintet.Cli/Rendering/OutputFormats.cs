using System.CommandLine;

namespace Quintet.Cli.Rendering;

/// <summary>The <c>--output</c> option shared by commands that print data.</summary>
internal static class OutputFormats
{
    public const string Table = "table";
    public const string Json = "json";

    public static Option<string> CreateOption()
    {
        var option = new Option<string>("--output", "-o")
        {
            Description = "How to print: 'table' for people, 'json' for scripts.",
            DefaultValueFactory = _ => Table,
        };
        option.AcceptOnlyFromAmong(Table, Json);
        return option;
    }
}
