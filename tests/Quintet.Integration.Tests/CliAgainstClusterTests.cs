using System.Text.Json;
using Quintet.Cli;

namespace Quintet.Integration.Tests;

public class CliAgainstClusterTests(ITestOutputHelper output)
{
    [Fact]
    public Task Cluster_show_prints_every_manager_as_a_table_and_as_json() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(3), async cluster =>
        {
            var endpoint = cluster.Managers[1].GrpcEndpoint;

            using var table = new StringWriter();
            using var tableErrors = new StringWriter();
            Assert.Equal(ExitCodes.Ok, await QuintetCli.RunAsync(["cluster", "show", "--endpoint", endpoint], table, tableErrors));
            output.WriteLine(table.ToString());
            foreach (var manager in cluster.Managers)
            {
                Assert.Contains(manager.Name, table.ToString(), StringComparison.Ordinal);
                Assert.Contains(manager.GrpcEndpoint, table.ToString(), StringComparison.Ordinal);
            }

            Assert.Contains("3 of 3 Up", table.ToString(), StringComparison.Ordinal);
            Assert.Empty(tableErrors.ToString());

            using var json = new StringWriter();
            Assert.Equal(ExitCodes.Ok, await QuintetCli.RunAsync(["cluster", "show", "--endpoint", endpoint, "--output", "json"], json, TextWriter.Null));
            using var document = JsonDocument.Parse(json.ToString());
            var managers = document.RootElement.GetProperty("managers").EnumerateArray().ToList();
            Assert.Equal(3, managers.Count);
            Assert.All(managers, m => Assert.Equal("MANAGER_STATE_UP", m.GetProperty("state").GetString()));
            Assert.Equal(cluster.Managers[1].ClusterAddress, document.RootElement.GetProperty("answeredBy").GetString());
        });
}
