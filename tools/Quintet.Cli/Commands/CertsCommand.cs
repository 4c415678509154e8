using System.CommandLine;
using System.Security.Cryptography.X509Certificates;
using Quintet.Security;
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
        var command = new Command("create-ca", "Create the cluster's CA: ca.crt (give it to every manager and client) and ca.key (keep it safe; only issuing needs it).")
        {
            folder, caKey, name, days, overwrite,
        };
        command.SetAction(parse => Run(context, () =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var keyPath = parse.GetValue(caKey) ?? Path.Combine(directory, CertificateFiles.AuthorityKey);
            using var authority = CertificateAuthority.Create(parse.GetRequiredValue(name), TimeSpan.FromDays(parse.GetRequiredValue(days)));
            CertificateFiles.Write(authority.Certificate, Path.Combine(directory, CertificateFiles.AuthorityCertificate), keyPath, parse.GetValue(overwrite));
            Describe(context, "Created the CA", Path.Combine(directory, CertificateFiles.AuthorityCertificate), authority.Certificate);
            context.Console.MarkupLine($"Its key is in [bold]{Markup.Escape(keyPath)}[/]: anyone with it can issue certificates the cluster trusts.");
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
        var command = new Command("create-manager", "Issue a manager's certificate (manager.crt, manager.key) with the CA in the folder.")
        {
            hosts, folder, caKey, name, days, overwrite,
        };
        command.SetAction(parse => Run(context, () =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var addresses = parse.GetRequiredValue(hosts);
            using var authority = LoadAuthority(directory, parse.GetValue(caKey));
            using var issued = authority.IssueManager(parse.GetValue(name) ?? addresses[0], addresses, TimeSpan.FromDays(parse.GetRequiredValue(days)));
            var path = Path.Combine(directory, CertificateFiles.ManagerCertificate);
            CertificateFiles.Write(issued, path, Path.Combine(directory, CertificateFiles.ManagerKey), parse.GetValue(overwrite));
            Describe(context, "Issued a manager certificate", path, issued);
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
        var command = new Command("create-client", "Issue a client's certificate (client.<user>.crt, client.<user>.key) with the CA in the folder.")
        {
            user, roles, folder, caKey, days, overwrite,
        };
        command.SetAction(parse => Run(context, () =>
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
            CertificateFiles.Write(issued, path, Path.Combine(directory, CertificateFiles.ClientKey(name)), parse.GetValue(overwrite));
            Describe(context, "Issued a client certificate", path, issued);
        }));
        return command;
    }

    private static Command Trust(CliContext context)
    {
        var authority = new Argument<string>("ca-certificate") { Description = "The PEM certificate of another CA (a new CA during a rotation)." };
        var folder = FolderOption();
        var command = new Command("trust", "Add a CA to the folder's trusted CAs (ca.crt), the first step of a rotation; copy ca.crt to every manager and client.")
        {
            authority, folder,
        };
        command.SetAction(parse => Run(context, () =>
        {
            var directory = Folder(parse.GetRequiredValue(folder));
            var bundlePath = Path.Combine(directory, CertificateFiles.AuthorityCertificate);
            var trusted = File.Exists(bundlePath) ? CertificateFiles.LoadBundle(bundlePath) : [];
            foreach (var added in CertificateFiles.LoadBundle(parse.GetRequiredValue(authority)))
            {
                if (trusted.Any(c => c.Thumbprint == added.Thumbprint))
                {
                    context.Console.MarkupLine($"Already trusted: {Markup.Escape(added.Subject)}");
                    continue;
                }

                CertificateFiles.AppendCertificate(added, bundlePath);
                Describe(context, "Now trusted", bundlePath, added);
            }
        }));
        return command;
    }

    private static Command List(CliContext context)
    {
        var folder = FolderOption();
        var command = new Command("list", "List the certificates in the folder: kind, name, roles, names and addresses, expiry, and whether the folder's CAs trust them.") { folder };
        command.SetAction(parse => Run(context, () =>
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

            context.Console.Write(table);
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

    private static void Describe(CliContext context, string what, string path, X509Certificate2 certificate)
    {
        var identity = CertificateIdentity.Of(certificate);
        var roles = identity.Roles.Count > 0 ? $", roles {string.Join(", ", identity.Roles)}" : "";
        var hosts = string.Join(", ", Hosts(certificate));
        context.Console.MarkupLine(Markup.Escape($"{what}: {path} ({identity.Name}{roles}{(hosts.Length > 0 ? $", for {hosts}" : "")}; valid until {certificate.NotAfter.ToUniversalTime():yyyy-MM-dd} UTC)"));
    }

    private static int Run(CliContext context, Action work)
    {
        try
        {
            work();
            return ExitCodes.Ok;
        }
        catch (Exception e) when (e is CertificateException or IOException or UnauthorizedAccessException or ArgumentException)
        {
            return context.Fail(ExitCodes.Failed, e.Message);
        }
    }
}
