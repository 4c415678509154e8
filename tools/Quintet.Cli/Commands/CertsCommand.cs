using System.CommandLine;
using System.Security.Cryptography.X509Certificates;
using Quintet.Security;
using Quintet.Cli.Rendering;
using Spectre.Console;

namespace Quintet.Cli.Commands;

/// <summary>
/// <c>quintet certs ...</c>: a cluster CA, manager certificates and client certificates with roles, as PEM files in a
/// certificates folder (the layout a manager reads with <c>Quintet:Security:CertificatesDirectory</c>).
/// </summary>
internal static class CertsCommand
{
    public static Command Create(CliContext context) =>
        new("certs", "Create and list the cluster's certificates: a CA, manager certificates, client certificates with roles.")
        {
            CreateAuthority(context),
            CreateManager(context),
            CreateClient(context),
            Trust(context),
            List(context),
        };

    private static Command CreateAuthority(CliContext context)
    {
        var folder = FolderOption();
        var caKey = CaKeyOption();
        var name = new Option<string>("--name") { Description = "The CA's common name.", DefaultValueFactory = _ => "Quintet cluster CA" };
        var days = DaysOption(CertificateAuthority.DefaultAuthorityValidity);
        var overwrite = OverwriteOption();
        var output = OutputFormats.CreateOption();
        var command = new Command("create-ca", "Create the cluster's CA: ca.crt (give it to every manager and client) and ca.key (keep it safe; only issuing needs it).")
        {
            folder, caKey, name, days, overwrite, output,
        };
        command.SetAction(parse => Run(context, parse.GetValue(output), report =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var keyPath = parse.GetValue(caKey) ?? Path.Combine(directory, CertificateFiles.AuthorityKey);
            using var authority = CertificateAuthority.Create(parse.GetRequiredValue(name), TimeSpan.FromDays(parse.GetRequiredValue(days)));
            CertificateFiles.Write(authority.Certificate, Path.Combine(directory, CertificateFiles.AuthorityCertificate), keyPath, parse.GetValue(overwrite));
            report.Add("Created the CA", Path.Combine(directory, CertificateFiles.AuthorityCertificate), authority.Certificate, Path.GetFullPath(keyPath));
            report.Say($"Its key is in {keyPath}: anyone with it can issue certificates the cluster trusts.");
        }));
        return command;
    }

    private static Command CreateManager(CliContext context)
    {
        var hosts = new Argument<string[]>("hosts")
        {
            Description = "The IP addresses and DNS names this manager is reached by (its subject alternative names).",
            Arity = ArgumentArity.OneOrMore,
        };
        var folder = FolderOption();
        var caKey = CaKeyOption();
        var name = new Option<string?>("--name") { Description = "The manager's node name; the first host by default." };
        var days = DaysOption(CertificateAuthority.DefaultValidity);
        var overwrite = OverwriteOption();
        var output = OutputFormats.CreateOption();
        var command = new Command("create-manager", "Issue a manager's certificate (manager.crt, manager.key) with the CA in the folder.")
        {
            hosts, folder, caKey, name, days, overwrite, output,
        };
        command.SetAction(parse => Run(context, parse.GetValue(output), report =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var addresses = parse.GetRequiredValue(hosts);
            using var authority = LoadAuthority(directory, parse.GetValue(caKey));
            using var issued = authority.IssueManager(parse.GetValue(name) ?? addresses[0], addresses, TimeSpan.FromDays(parse.GetRequiredValue(days)));
            var path = Path.Combine(directory, CertificateFiles.ManagerCertificate);
            var keyPath = Path.Combine(directory, CertificateFiles.ManagerKey);
            CertificateFiles.Write(issued, path, keyPath, parse.GetValue(overwrite));
            report.Add("Issued a manager certificate", path, issued, Path.GetFullPath(keyPath));
        }));
        return command;
    }

    private static Command CreateClient(CliContext context)
    {
        var user = new Argument<string>("user") { Description = "The client's name, as components and the audit log see it." };
        var roles = new Option<string[]>("--role")
        {
            Description = "A role the client has (repeat for several): admin, operator, reader, or a component role.",
            AllowMultipleArgumentsPerToken = true,
        };
        var folder = FolderOption();
        var caKey = CaKeyOption();
        var days = DaysOption(CertificateAuthority.DefaultValidity);
        var overwrite = OverwriteOption();
        var output = OutputFormats.CreateOption();
        var command = new Command("create-client", "Issue a client's certificate (client.<user>.crt, client.<user>.key) with the CA in the folder.")
        {
            user, roles, folder, caKey, days, overwrite, output,
        };
        command.SetAction(parse => Run(context, parse.GetValue(output), report =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var name = parse.GetRequiredValue(user);
            if (name.IndexOfAny(Path.GetInvalidFileNameChars()) >= 0 || name.StartsWith('.'))
            {
                throw new ArgumentException($"'{name}' cannot name a file; use letters, digits, '-' and '_'.");
            }

            using var authority = LoadAuthority(directory, parse.GetValue(caKey));
            using var issued = authority.IssueClient(name, parse.GetValue(roles) ?? [], TimeSpan.FromDays(parse.GetRequiredValue(days)));
            var path = Path.Combine(directory, CertificateFiles.ClientCertificate(name));
            var keyPath = Path.Combine(directory, CertificateFiles.ClientKey(name));
            CertificateFiles.Write(issued, path, keyPath, parse.GetValue(overwrite));
            report.Add("Issued a client certificate", path, issued, Path.GetFullPath(keyPath));
        }));
        return command;
    }

    private static Command Trust(CliContext context)
    {
        var authority = new Argument<string>("ca-certificate") { Description = "The PEM certificate of another CA (a new CA during a rotation)." };
        var folder = FolderOption();
        var output = OutputFormats.CreateOption();
        var command = new Command("trust", "Add a CA to the folder's trusted CAs (ca.crt), the first step of a rotation; copy ca.crt to every manager and client.")
        {
            authority, folder, output,
        };
        command.SetAction(parse => Run(context, parse.GetValue(output), report =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var bundlePath = Path.Combine(directory, CertificateFiles.AuthorityCertificate);
            var trusted = File.Exists(bundlePath) ? CertificateFiles.LoadBundle(bundlePath) : [];
            foreach (var added in CertificateFiles.LoadBundle(parse.GetRequiredValue(authority)))
            {
                if (trusted.Any(c => c.Thumbprint == added.Thumbprint))
                {
                    report.Add("Already trusted", bundlePath, added, keyFile: null, line: $"Already trusted: {added.Subject}");
                    continue;
                }

                CertificateFiles.AppendCertificate(added, bundlePath);
                report.Add("Now trusted", bundlePath, added);
            }
        }));
        return command;
    }

    private static Command List(CliContext context)
    {
        var folder = FolderOption();
        var output = OutputFormats.CreateOption();
        var command = new Command("list", "List the certificates in the folder: kind, name, roles, names and addresses, expiry, and whether the folder's CAs trust them.") { folder, output };
        command.SetAction(parse => Run(context, parse.GetValue(output), report =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var bundlePath = Path.Combine(directory, CertificateFiles.AuthorityCertificate);
            var trust = File.Exists(bundlePath) ? ClusterTrust.Load(bundlePath) : null;
            var table = new Table().AddColumns("file", "kind", "name", "roles", "hosts", "expires (UTC)", "trusted");
            foreach (var file in Directory.EnumerateFiles(directory, "*.crt").Order(StringComparer.Ordinal))
            {
                foreach (var certificate in CertificateFiles.LoadBundle(file))
                {
                    var identity = CertificateIdentity.Of(certificate);
                    var authority = certificate.Extensions.OfType<X509BasicConstraintsExtension>().FirstOrDefault() is { CertificateAuthority: true };
                    var check = authority || trust is null ? null : trust.Check(certificate, identity.Kind);
                    report.Add("Listed", file, certificate, keyFile: null, line: null, trusted: check is null ? null : check.IsAccepted, reason: check is { IsAccepted: false } ? check.Reason : null);
                    table.AddRow(
                        Markup.Escape(Path.GetFileName(file)),
                        authority ? "CA" : identity.Kind == CertificateKind.Manager ? "manager" : "client",
                        Markup.Escape(identity.Name),
                        Markup.Escape(string.Join(", ", identity.Roles)),
                        Markup.Escape(string.Join(", ", Hosts(certificate))),
                        certificate.NotAfter.ToUniversalTime().ToString("yyyy-MM-dd HH:mm", System.Globalization.CultureInfo.InvariantCulture),
                        check is null ? "" : check.IsAccepted ? "yes" : Markup.Escape("no: " + check.Reason));
                }
            }

            report.Table = table;
        }));
        return command;
    }

    private static Option<string> FolderOption() =>
        new("--certs-dir") { Description = "The certificates folder.", Required = true };

    private static Option<string?> CaKeyOption() =>
        new("--ca-key") { Description = "The CA's key file, if kept outside the folder; ca.key in the folder by default." };

    private static Option<int> DaysOption(TimeSpan validity) =>
        new("--days")
        {
            Description = "How many days the certificate is valid.",
            DefaultValueFactory = _ => (int)validity.TotalDays,
            Validators = { result => { if (result.GetValueOrDefault<int>() < 1) { result.AddError("--days must be at least 1."); } } },
        };

    private static Option<bool> OverwriteOption() =>
        new("--overwrite") { Description = "Replace files that exist (never done otherwise)." };

    private static string Folder(string path)
    {
        Directory.CreateDirectory(path);
        return path;
    }

    private static CertificateAuthority LoadAuthority(string directory, string? keyPath) =>
        CertificateAuthority.Load(Path.Combine(directory, CertificateFiles.AuthorityCertificate), keyPath ?? Path.Combine(directory, CertificateFiles.AuthorityKey));

    private static IEnumerable<string> Hosts(X509Certificate2 certificate) =>
        certificate.Extensions.OfType<X509SubjectAlternativeNameExtension>().SelectMany(e =>
            e.EnumerateDnsNames().Concat(e.EnumerateIPAddresses().Select(a => a.ToString())));

    /// <summary>
    /// Runs a certificates command: <paramref name="work"/> fills the report, which is printed as lines (and a table)
    /// for people or as one JSON document: <c>{"certificates": [{action, file, keyFile, kind, name, roles, hosts,
    /// notAfter, thumbprint, trusted, reason}]}</c>.
    /// </summary>
    private static int Run(CliContext context, string? format, Action<CertificatesReport> work)
    {
        var report = new CertificatesReport();
        try
        {
            work(report);
        }
        catch (Exception e) when (e is CertificateException or IOException or UnauthorizedAccessException or ArgumentException)
        {
            return context.Fail(ExitCodes.Failed, e.Message);
        }

        if (OutputFormats.IsJson(format))
        {
            OutputFormats.WriteJson(context, new { certificates = report.Certificates });
            return ExitCodes.Ok;
        }

        foreach (var line in report.Lines)
        {
            context.Console.MarkupLine(Markup.Escape(line));
        }

        if (report.Table is not null)
        {
            context.Console.Write(report.Table);
        }

        return ExitCodes.Ok;
    }

    /// <summary>What a certificates command did, certificate by certificate.</summary>
    private sealed class CertificatesReport
    {
        public List<CertificateRecord> Certificates { get; } = [];

        public List<string> Lines { get; } = [];

        public Table? Table { get; set; }

        public void Say(string line) => Lines.Add(line);

        public void Add(string action, string path, X509Certificate2 certificate, string? keyFile = null, string? line = "", bool? trusted = null, string? reason = null)
        {
            var identity = CertificateIdentity.Of(certificate);
            var authority = certificate.Extensions.OfType<X509BasicConstraintsExtension>().FirstOrDefault() is { CertificateAuthority: true };
            var hosts = Hosts(certificate).ToList();
            Certificates.Add(new CertificateRecord(
                action, Path.GetFullPath(path), keyFile, authority ? "ca" : identity.Kind == CertificateKind.Manager ? "manager" : "client", identity.Name, [.. identity.Roles], hosts,
                certificate.NotAfter.ToUniversalTime(), certificate.Thumbprint, trusted, reason));
            if (line is null)
            {
                return;
            }

            var roles = identity.Roles.Count > 0 ? $", roles {string.Join(", ", identity.Roles)}" : "";
            var names = string.Join(", ", hosts);
            Lines.Add(line.Length > 0 ? line : $"{action}: {path} ({identity.Name}{roles}{(names.Length > 0 ? $", for {names}" : "")}; valid until {certificate.NotAfter.ToUniversalTime():yyyy-MM-dd} UTC)");
        }
    }

    /// <summary>One certificate in the JSON output.</summary>
    private sealed record CertificateRecord(
        string Action, string File, string? KeyFile, string Kind, string Name, string[] Roles, List<string> Hosts, DateTime NotAfter, string Thumbprint, bool? Trusted, string? Reason);
}
