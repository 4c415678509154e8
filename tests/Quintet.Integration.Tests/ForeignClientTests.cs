using System.Diagnostics;
using Quintet.Cli;
using Quintet.TestingHost;

namespace Quintet.Integration.Tests;

/// <summary>
/// A component called from Python with its standard gRPC library (Debian's python3-grpcio, installed on first use),
/// through the .proto that <c>quintet proto export</c> writes; the package is deployed with <c>quintet component deploy</c>.
/// </summary>
public class ForeignClientTests(ITestOutputHelper output)
{
    private const string Python = "/usr/bin/python3";

    private const string Script = """
        import sys
        import grpc
        sys.path.insert(0, sys.argv[1])
        import counter_pb2, counter_pb2_grpc

        channel = grpc.insecure_channel(sys.argv[2])
        stub = counter_pb2_grpc.CounterStub(channel)
        request = counter_pb2.AddRequest()
        setattr(request, request.DESCRIPTOR.fields[0].name, 40)
        stub.Add(request, metadata=[("quintet-key", "from-python")], timeout=30)
        setattr(request, request.DESCRIPTOR.fields[0].name, 2)
        reply = stub.Add(request, metadata=[("quintet-key", "from-python")], timeout=30)
        print("value", getattr(reply, reply.DESCRIPTOR.fields[0].name))
        try:
            stub.Get(counter_pb2.GetRequest(), metadata=[("quintet-key", "x")], timeout=30)
            bad = channel.unary_unary("/samples.counter.Counter/Add")(b"\x0a\xff\xff", metadata=[("quintet-key", "x")], timeout=30)
        except grpc.RpcError as error:
            print("error", error.code().name, error.details())
        """;

    /// <summary>
    /// Against a secured manager: with the cluster's CA and a client certificate, then with a bearer token and no
    /// certificate, then with neither, then in plaintext. The manager's certificate names 127.0.0.1 and localhost;
    /// gRPC's C core checks the name it dials against them, so the script names localhost while it dials 127.0.0.1.
    /// </summary>
    private const string SecuredScript = """
        import sys
        import grpc
        sys.path.insert(0, sys.argv[1])
        import counter_pb2, counter_pb2_grpc
        target, ca, cert, key, token = sys.argv[2:7]
        read = lambda path: open(path, "rb").read()
        options = [("grpc.ssl_target_name_override", "localhost")]

        def add(channel, amount, metadata):
            request = counter_pb2.AddRequest()
            setattr(request, request.DESCRIPTOR.fields[0].name, amount)
            reply = counter_pb2_grpc.CounterStub(channel).Add(request, metadata=[("quintet-key", "from-python")] + metadata, timeout=30)
            return getattr(reply, reply.DESCRIPTOR.fields[0].name)

        def attempt(label, channel, metadata):
            try:
                print(label, "value", add(channel, 1, metadata))
            except grpc.RpcError as error:
                print(label, "error", error.code().name, error.details())

        with_certificate = grpc.secure_channel(target, grpc.ssl_channel_credentials(read(ca), read(key), read(cert)), options)
        add(with_certificate, 40, [])
        attempt("certificate", with_certificate, [])
        server_only = grpc.secure_channel(target, grpc.ssl_channel_credentials(read(ca)), options)
        attempt("token", server_only, [("authorization", "Bearer " + token)])
        attempt("none", server_only, [])
        attempt("plaintext", grpc.insecure_channel(target), [])
        """;

    [Fact]
    public async Task Python_calls_a_secured_component_with_a_client_certificate_or_a_token_and_is_refused_without()
    {
        await DebianPackages.EnsureAsync(["python3-grpcio", "python3-grpc-tools"]);
        using var certificates = LocalCertificates.Create();
        var secret = System.Security.Cryptography.RandomNumberGenerator.GetBytes(32);
        var options = ClusterTest.Options(1);
        options.Certificates = certificates;
        options.Settings["Quintet:Security:Jwt:SigningKeys:0"] = Convert.ToBase64String(secret);
        await ClusterTest.RunAsync(output, options, async cluster =>
        {
            var manager = cluster.Managers[0];
            var work = Directory.CreateTempSubdirectory("quintet-python-").FullName;
            var zip = Path.Combine(work, "counter.zip");
            await File.WriteAllBytesAsync(zip, ComponentCallTests.CounterPackage());
            var (adminCertificate, adminKey) = certificates.IssueClient("py-admin", "admin");
            string[] asAdmin = ["--endpoint", manager.GrpcEndpoint, "--ca", certificates.AuthorityFile, "--cert", adminCertificate, "--key", adminKey];

            var (deployCode, deployOutput) = await CliAsync(["component", "deploy", zip, .. asAdmin]);
            Assert.True(deployCode == ExitCodes.Ok, deployOutput);
            var proto = Path.Combine(work, "counter.proto");
            var (exportCode, exportOutput) = await CliAsync(["proto", "export", "--contract", "samples.counter.Counter", "--output", proto, .. asAdmin]);
            Assert.True(exportCode == ExitCodes.Ok, exportOutput);
            var (protocCode, protocOutput) = await RunAsync(Python, "-m", "grpc_tools.protoc", "-I", work, "--python_out", work, "--grpc_python_out", work, proto);
            Assert.True(protocCode == 0, protocOutput);

            var (certificate, key) = certificates.IssueClient("py-user");
            var token = SecuredClusterFixture.CreateToken(secret, "py-token", []);
            var script = Path.Combine(work, "secured.py");
            await File.WriteAllTextAsync(script, SecuredScript);
            var (code, text) = await RunAsync(Python, script, work, new Uri(manager.GrpcEndpoint).Authority, certificates.AuthorityFile, certificate, key, token);
            output.WriteLine(text);
            Assert.True(code == 0, text);
            Assert.Contains("certificate value 41", text, StringComparison.Ordinal);
            Assert.Contains("token value 42", text, StringComparison.Ordinal);
            Assert.Contains("none error UNAUTHENTICATED", text, StringComparison.Ordinal);

            // Plaintext HTTP/2 to the TLS port never gets an answer from the manager: the connection fails.
            Assert.Contains("plaintext error UNAVAILABLE", text, StringComparison.Ordinal);
        });
    }

    [Fact]
    public async Task Python_calls_a_component_through_the_exported_proto()
    {
        await DebianPackages.EnsureAsync(["python3-grpcio", "python3-grpc-tools"]);
        await ClusterTest.RunAsync(output, ClusterTest.Options(1), async cluster =>
        {
            var manager = cluster.Managers[0];
            var work = Directory.CreateTempSubdirectory("quintet-python-").FullName;
            var zip = Path.Combine(work, "counter.zip");
            await File.WriteAllBytesAsync(zip, ComponentCallTests.CounterPackage());

            var (deployCode, deployOutput) = await CliAsync("component", "deploy", zip, "--endpoint", manager.GrpcEndpoint);
            Assert.True(deployCode == ExitCodes.Ok, deployOutput);
            Assert.Contains("samples.counter.Counter", deployOutput, StringComparison.Ordinal);
            var proto = Path.Combine(work, "counter.proto");
            var (exportCode, exportOutput) = await CliAsync("proto", "export", "--contract", "samples.counter.Counter", "--output", proto, "--endpoint", manager.GrpcEndpoint);
            Assert.True(exportCode == ExitCodes.Ok, exportOutput);
            output.WriteLine(await File.ReadAllTextAsync(proto));
            var (missingCode, missingOutput) = await CliAsync("proto", "export", "--contract", "acme.Nothing", "--endpoint", manager.GrpcEndpoint);
            Assert.Equal(ExitCodes.Failed, missingCode);
            Assert.Contains("NotFound", missingOutput, StringComparison.Ordinal);

            var (protocCode, protocOutput) = await RunAsync(Python, "-m", "grpc_tools.protoc", "-I", work, "--python_out", work, "--grpc_python_out", work, proto);
            Assert.True(protocCode == 0, protocOutput);
            var script = Path.Combine(work, "call.py");
            await File.WriteAllTextAsync(script, Script);
            var target = new Uri(manager.GrpcEndpoint).Authority;
            var (code, text) = await RunAsync(Python, script, work, target);
            output.WriteLine(text);
            Assert.True(code == 0, text);
            Assert.Contains("value 42", text, StringComparison.Ordinal);
            Assert.Contains("error INVALID_ARGUMENT", text, StringComparison.Ordinal);
        });
    }

    internal static async Task<(int Code, string Output)> CliAsync(params string[] args)
    {
        using var stdout = new StringWriter();
        using var stderr = new StringWriter();
        var code = await QuintetCli.RunAsync(args, stdout, stderr);
        return (code, stdout + stderr.ToString());
    }

    internal static async Task<(int Code, string Output)> RunAsync(string program, params string[] args)
    {
        var info = new ProcessStartInfo(program) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        using var process = Process.Start(info)!;
        using var bounded = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var stdout = process.StandardOutput.ReadToEndAsync(bounded.Token);
        var stderr = process.StandardError.ReadToEndAsync(bounded.Token);
        try
        {
            await process.WaitForExitAsync(bounded.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill();
            throw new TimeoutException($"{program} {string.Join(' ', args)} did not finish within 2 minutes.");
        }

        return (process.ExitCode, await stdout + await stderr);
    }
}
