using System.Text.RegularExpressions;

namespace Quintet.Packaging.Tests;

/// <summary>
/// The three jobs the samples show, counted as non-blank, non-comment lines of C# (contract included): a primary/backup
/// account with failover at most 50, a cache shared by every instance with linearizable writes and local reads at most
/// 30, a leader-run singleton job with fenced leadership at most 30. docs/line-counts.md states these counts and those of
/// the same jobs in Service Fabric, Orleans and Akka.NET, whose code it holds; both are counted here the same way, so the
/// page cannot drift from the code.
/// </summary>
public sealed partial class SampleLineCountTests
{
    private static readonly string[] Peers = ["Service Fabric", "Orleans", "Akka.NET"];

    /// <summary>Each job's files and its target.</summary>
    private static readonly (string Job, string[] Files, int Target)[] Jobs =
    [
        ("account", ["samples/BankAccount/IAccount.cs", "samples/BankAccount/AccountComponent.cs"], 50),
        ("cache", ["samples/SharedCache/CacheComponent.cs"], 30),
        ("job", ["samples/Election/JobComponent.cs"], 30),
    ];

    /// <summary>Lines that are neither blank nor only a comment (<c>//</c>, <c>///</c>, or inside <c>/* */</c>).</summary>
    public static int CountCodeLines(IEnumerable<string> lines)
    {
        var count = 0;
        var inBlock = false;
        foreach (var raw in lines)
        {
            var line = raw.Trim();
            if (inBlock)
            {
                var end = line.IndexOf("*/", StringComparison.Ordinal);
                if (end < 0)
                {
                    continue;
                }

                inBlock = false;
                line = line[(end + 2)..].Trim();
            }

            while (line.StartsWith("/*", StringComparison.Ordinal))
            {
                var end = line.IndexOf("*/", 2, StringComparison.Ordinal);
                if (end < 0)
                {
                    inBlock = true;
                    line = string.Empty;
                    break;
                }

                line = line[(end + 2)..].Trim();
            }

            if (line.Length > 0 && !line.StartsWith("//", StringComparison.Ordinal))
            {
                count++;
            }
        }

        return count;
    }

    private static int CountFiles(IEnumerable<string> files) =>
        files.Sum(f => CountCodeLines(File.ReadAllLines(Path.Combine(Repository.Root, f))));

    [Fact]
    public void The_counter_skips_blank_lines_and_comments_and_counts_code_with_a_trailing_comment()
    {
        string[] lines =
        [
            "using Quintet.Components;",
            "",
            "/// <summary>A doc comment.</summary>",
            "  // a comment",
            "/* a block",
            "   still the block */",
            "/* one line */ var x = 1;",
            "var y = 2; // trailing",
            "   ",
            "}",
        ];
        Assert.Equal(4, CountCodeLines(lines));
    }

    [Theory]
    [InlineData("account")]
    [InlineData("cache")]
    [InlineData("job")]
    public void Each_job_in_the_samples_is_within_its_target(string job)
    {
        var (_, files, target) = Jobs.Single(j => j.Job == job);
        var count = CountFiles(files);
        Assert.True(count <= target, $"The {job} sample ({string.Join(", ", files)}) has {count} lines of C#; the target is {target}.");
    }

    [Fact]
    public void The_line_counts_page_states_what_the_samples_and_its_own_code_blocks_count()
    {
        var page = File.ReadAllText(Path.Combine(Repository.Root, "docs/line-counts.md"));
        foreach (var (job, files, _) in Jobs)
        {
            var row = Row(page, job);
            Assert.Equal(CountFiles(files).ToString(System.Globalization.CultureInfo.InvariantCulture), row[0]);
            for (var i = 0; i < Peers.Length; i++)
            {
                var block = CodeBlock(page, $"{Peers[i]}: {job}");
                Assert.True(
                    row[i + 1] == CountCodeLines(block).ToString(System.Globalization.CultureInfo.InvariantCulture),
                    $"docs/line-counts.md states {row[i + 1]} lines for {Peers[i]} ({job}); its code block counts {CountCodeLines(block)}.");
            }
        }
    }

    /// <summary>The counts of the table row of <paramref name="job"/>: Quintet's, then each peer's.</summary>
    private static string[] Row(string page, string job)
    {
        var line = page.Split('\n').SingleOrDefault(l => l.StartsWith($"| {job} |", StringComparison.Ordinal))
            ?? throw new InvalidOperationException($"docs/line-counts.md has no table row '| {job} |'.");
        return [.. line.Split('|', StringSplitOptions.TrimEntries).Skip(2).Take(1 + Peers.Length)];
    }

    /// <summary>The C# block under the heading <c>### {title}</c>.</summary>
    private static string[] CodeBlock(string page, string title)
    {
        var match = CodeBlockPattern().Matches(page).SingleOrDefault(m => m.Groups["title"].Value.Trim() == title)
            ?? throw new InvalidOperationException($"docs/line-counts.md has no '### {title}' heading followed by a csharp block.");
        return match.Groups["code"].Value.Split('\n');
    }

    [GeneratedRegex(@"^### (?<title>[^\n]+)\n(?:(?!```|### )[^\n]*\n)*```csharp\n(?<code>.*?)\n```", RegexOptions.Multiline | RegexOptions.Singleline)]
    private static partial Regex CodeBlockPattern();
}
