using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace Quintet.Integration.Tests;

/// <summary>The manager as an operator starts it: bad configuration ends it at once with a message naming the setting.</summary>
public class ManagerStartupTests
{
    private static readonly TimeSpan ExitBound = TimeSpan.FromSeconds(60);

    internal static async Task<(int ExitCode, string Error)> RunManagerAsync(params string[] args)
    {
        var info = new ProcessStartInfo("dotnet")
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        info.ArgumentList.Add("exec");
        info.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Quintet.Manager.dll"));
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        // Never the default ports, so a manager running on this machine cannot interfere.
        info.ArgumentList.Add("--Quintet:Manager:ParentProcessId=" + Environment.ProcessId);
        using var process = Process.Start(info)!;
        var error = process.StandardError.ReadToEndAsync();
        var stdout = process.StandardOutput.ReadToEndAsync();
        using var bound = new CancellationTokenSource(ExitBound);
        try
        {
            await process.WaitForExitAsync(bound.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill();
            throw new TimeoutException($"The manager did not exit within {ExitBound}. Output: {await stdout}");
        }

        return (process.ExitCode, await error + await stdout);
    }

    private static (TcpListener Listener, int Port) Occupy()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return (listener, ((IPEndPoint)listener.LocalEndpoint).Port);
    }

    [Fact]
    public async Task Grpc_port_in_use_is_named_and_exits_with_code_3()
    {
        var (listener, port) = Occupy();
        using (listener.Server)
        {
            var (code, error) = await RunManagerAsync($"--Quintet:Manager:GrpcPort={port}", "--Quintet:Cluster:Port=0");

            Assert.Equal(3, code);
            Assert.Contains($"Quintet:Manager:GrpcPort: port {port} on 127.0.0.1 is already in use", error, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Cluster_port_in_use_is_named_and_exits_with_code_3()
    {
        var (listener, port) = Occupy();
        using (listener.Server)
        {
            var (code, error) = await RunManagerAsync("--Quintet:Manager:GrpcPort=0", $"--Quintet:Cluster:Port={port}");

            Assert.Equal(3, code);
            Assert.Contains($"Quintet:Cluster:Port: port {port} on 127.0.0.1 is already in use", error, StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("--Quintet:Cluster:Seeds:0=127.0.0.1", "Quintet:Cluster:Seeds:0: '127.0.0.1' is not host:port")]
    [InlineData("--Quintet:Cluster:Seeds:0=akka.tcp://other@127.0.0.1:4053", "Quintet:Cluster:Seeds:0: 'akka.tcp://other@127.0.0.1:4053' names cluster 'other'")]
    [InlineData("--Quintet:Cluster:FailureDetector:Threshold=high", "'Quintet:Cluster:FailureDetector:Threshold'")]
    [InlineData("--Quintet:Cluster:Downing:StableAfter=soon", "'Quintet:Cluster:Downing:StableAfter'")]
    [InlineData("--Quintet:Cluster:Sedes:0=127.0.0.1:4053", "Quintet:Cluster:Sedes: is not a known setting")]
    [InlineData("--Quintet:Manager:GrpcHost=example.com", "Quintet:Manager:GrpcHost: 'example.com' must be an IP address or 'localhost'")]
    [InlineData("--Quintet:Manager:GrpcHost=0.0.0.0", "Quintet:Security: this manager would listen on 0.0.0.0 with no security")]
    [InlineData("--Quintet:Security:CertificatesDirectory=/nonexistent-quintet-certs", "Quintet:Security: The CA certificate file '/nonexistent-quintet-certs/ca.crt' does not exist")]
    [InlineData("--Quintet:Security:Jwt:SigningKey=abc", "Quintet:Security:Jwt:SigningKey: is not a known setting")]
    [InlineData("--Quintet:Store:Kind=Nonsense", "Quintet:Store:Kind: 'Nonsense' is not a store kind; use 'replicated' (the default), 'local', 'postgresql'.")]
    public async Task Bad_configuration_is_named_and_exits_with_code_2(string argument, string expected)
    {
        var (code, error) = await RunManagerAsync("--Quintet:Manager:GrpcPort=0", "--Quintet:Cluster:Port=0", argument);

        Assert.Equal(2, code);
        Assert.Contains("quintet-manager: configuration error:", error, StringComparison.Ordinal);
        Assert.Contains(expected, error, StringComparison.Ordinal);
    }
}
