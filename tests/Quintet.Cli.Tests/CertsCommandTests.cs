using Quintet.Security;

namespace Quintet.Cli.Tests;

public sealed class CertsCommandTests : IDisposable
{
    private readonly string _folder = Directory.CreateTempSubdirectory("quintet-cli-certs-").FullName;

    public void Dispose() => Directory.Delete(_folder, recursive: true);

    [Fact]
    public async Task A_CA_then_a_manager_and_a_client_certificate_make_a_folder_a_manager_can_load()
    {
        Assert.Equal(ExitCodes.Ok, (await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder)).ExitCode);
        var manager = await CliRunner.RunAsync("certs", "create-manager", "127.0.0.1", "web1.example", "--name", "web1", "--certs-dir", _folder);
        var client = await CliRunner.RunAsync("certs", "create-client", "alice", "--role", "admin", "--role", "reader", "--certs-dir", _folder);

        Assert.Equal(ExitCodes.Ok, manager.ExitCode);
        Assert.Contains("web1, for web1.example, 127.0.0.1", manager.Output, StringComparison.Ordinal);
        Assert.Equal(ExitCodes.Ok, client.ExitCode);
        Assert.Contains("alice, roles admin, reader", client.Output, StringComparison.Ordinal);

        using var security = ClusterSecurity.Load(new SecurityOptions { CertificatesDirectory = _folder });
        Assert.True(security.Enabled);
        using var alice = CertificateFiles.LoadWithKey(Path.Combine(_folder, "client.alice.crt"), Path.Combine(_folder, "client.alice.key"));
        var check = security.Trust!.Check(alice, CertificateKind.Client);
        Assert.True(check.IsAccepted, check.Reason);
        Assert.Equal(["admin", "reader"], check.Identity!.Roles.Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task Existing_files_are_kept_unless_overwrite_is_passed()
    {
        await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder);
        var before = await File.ReadAllTextAsync(Path.Combine(_folder, "ca.crt"));

        var again = await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder);

        Assert.Equal(ExitCodes.Failed, again.ExitCode);
        Assert.Contains("exists; remove it first or pass --overwrite", again.Error, StringComparison.Ordinal);
        Assert.Equal(before, await File.ReadAllTextAsync(Path.Combine(_folder, "ca.crt")));
        Assert.Equal(ExitCodes.Ok, (await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder, "--overwrite")).ExitCode);
        Assert.NotEqual(before, await File.ReadAllTextAsync(Path.Combine(_folder, "ca.crt")));
    }

    [Fact]
    public async Task Issuing_without_a_CA_says_which_file_is_missing()
    {
        var (code, _, error) = await CliRunner.RunAsync("certs", "create-client", "bob", "--certs-dir", _folder);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("ca.crt' does not exist", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_managers_mark_is_not_a_role_a_client_can_get()
    {
        await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder);

        var (code, _, error) = await CliRunner.RunAsync("certs", "create-client", "mallory", "--role", "quintet-manager", "--certs-dir", _folder);

        Assert.Equal(ExitCodes.Failed, code);
        Assert.Contains("marks manager certificates", error, StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(_folder, "client.mallory.crt")));
    }

    [Fact]
    public async Task A_rotation_trusts_the_new_CA_beside_the_old_and_issues_with_the_new_one()
    {
        var next = Path.Combine(_folder, "next");
        await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder);
        await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", next, "--name", "Quintet cluster CA 2");
        await CliRunner.RunAsync("certs", "create-manager", "127.0.0.1", "--certs-dir", _folder);

        var trusted = await CliRunner.RunAsync("certs", "trust", Path.Combine(next, "ca.crt"), "--certs-dir", _folder);
        var twice = await CliRunner.RunAsync("certs", "trust", Path.Combine(next, "ca.crt"), "--certs-dir", _folder);
        var renewed = await CliRunner.RunAsync("certs", "create-manager", "127.0.0.1", "--certs-dir", next);
        var list = await CliRunner.RunAsync("certs", "list", "--certs-dir", _folder);

        Assert.Equal(ExitCodes.Ok, trusted.ExitCode);
        Assert.Contains("Already trusted", twice.Output, StringComparison.Ordinal);
        Assert.Equal(ExitCodes.Ok, renewed.ExitCode);
        Assert.Equal(2, ClusterTrust.Load(Path.Combine(_folder, "ca.crt")).Authorities.Count);
        using var renewedCertificate = CertificateFiles.LoadWithKey(Path.Combine(next, "manager.crt"), Path.Combine(next, "manager.key"));
        Assert.True(ClusterTrust.Load(Path.Combine(_folder, "ca.crt")).Check(renewedCertificate, CertificateKind.Manager).IsAccepted);
        Assert.Contains("Quintet cluster CA 2", list.Output, StringComparison.Ordinal);
        Assert.Contains("manager.crt", list.Output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_days_value_below_one_is_a_usage_error()
    {
        var (code, _, error) = await CliRunner.RunAsync("certs", "create-ca", "--certs-dir", _folder, "--days", "0");

        Assert.Equal(ExitCodes.Usage, code);
        Assert.Contains("--days must be at least 1", error, StringComparison.Ordinal);
    }
}
