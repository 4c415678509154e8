using System.Security.Claims;
using Grpc.AspNetCore.Server;
using Microsoft.AspNetCore.Authentication.Certificate;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.IdentityModel.Tokens;
using Quintet.Security;

namespace Quintet.Manager.Security;

/// <summary>
/// The gRPC port's security when <see cref="ClusterSecurity.Enabled"/>: TLS with the manager's certificate, callers
/// authenticated by ASP.NET Core's certificate and bearer handlers, and each endpoint's <see cref="Access"/> checked
/// by one policy per level. Nothing here runs with security off: the port stays as it was, cleartext and open.
/// </summary>
internal static class GrpcSecurity
{
    /// <summary>The authentication schemes every policy asks, in this order (the first identity names the caller).</summary>
    private static string[] Schemes(ClusterSecurity security) => security.Options.Jwt.Enabled
        ? [CertificateAuthenticationDefaults.AuthenticationScheme, JwtBearerDefaults.AuthenticationScheme]
        : [CertificateAuthenticationDefaults.AuthenticationScheme];

    /// <summary>TLS on a listener: the manager's certificate, and a client certificate asked for but not required (tokens and health probes come without one).</summary>
    public static void UseTls(this Microsoft.AspNetCore.Server.Kestrel.Core.ListenOptions listen, ClusterSecurity security)
    {
        listen.UseHttps(https =>
        {
            https.ServerCertificate = security.Certificate;
            https.ClientCertificateMode = ClientCertificateMode.AllowCertificate;

            // Accepted at the handshake and judged by the certificate handler against the cluster's CAs alone (never the
            // machine's store), so that a refused certificate gets UNAUTHENTICATED with the reason, not a broken connection.
            https.ClientCertificateValidation = (_, _, _) => true;
        });
    }

    /// <summary>Adds the authentication handlers, the policies of every <see cref="Access"/> level and the gRPC refusals.</summary>
    /// <exception cref="Configuration.ConfigurationErrorException">A token signing key cannot be read.</exception>
    public static IServiceCollection AddGrpcSecurity(this IServiceCollection services, ClusterSecurity security)
    {
        var trust = security.Trust!;
        var authentication = services.AddAuthentication(CertificateAuthenticationDefaults.AuthenticationScheme)
            .AddCertificate(o =>
            {
                o.AllowedCertificateTypes = CertificateTypes.Chained;
                o.ChainTrustValidationMode = System.Security.Cryptography.X509Certificates.X509ChainTrustMode.CustomRootTrust;
                o.CustomTrustStore = [.. trust.Authorities];
                o.RevocationMode = System.Security.Cryptography.X509Certificates.X509RevocationMode.NoCheck;
                o.Events = new CertificateAuthenticationEvents
                {
                    OnCertificateValidated = context =>
                    {
                        // The handler checked the chain; the cluster's own check adds the kinds and reads the identity.
                        var check = trust.Check(context.ClientCertificate, CertificateKind.Client);
                        if (check.Identity is not { } identity)
                        {
                            context.Fail(check.Reason!);
                            return Task.CompletedTask;
                        }

                        List<Claim> claims = [new(ClaimTypes.Name, identity.Name, ClaimValueTypes.String, context.Options.ClaimsIssuer)];
                        claims.AddRange(identity.Roles.Select(r => new Claim(ClaimTypes.Role, r)));
                        if (identity.Kind == CertificateKind.Manager)
                        {
                            claims.Add(new Claim(CallerClaims.Manager, "true"));
                        }

                        context.Principal = new ClaimsPrincipal(new ClaimsIdentity(claims, context.Scheme.Name, ClaimTypes.Name, ClaimTypes.Role));
                        context.Success();
                        return Task.CompletedTask;
                    },
                };
            });

        // The chain is built once per certificate, not once per call: component calls are the hot path.
        authentication.AddCertificateCache();

        var jwt = security.Options.Jwt;
        if (jwt.Enabled)
        {
            var keys = TokenSigningKeys.Read(jwt);
            authentication.AddJwtBearer(o =>
            {
                o.MapInboundClaims = false;
                o.RequireHttpsMetadata = true;
                o.TokenValidationParameters = new TokenValidationParameters
                {
                    IssuerSigningKeys = keys,
                    ValidIssuer = jwt.Issuer,
                    ValidAudience = jwt.Audience,
                    NameClaimType = jwt.NameClaim,
                    RoleClaimType = jwt.RolesClaim,
                    RequireExpirationTime = true,
                    ClockSkew = TimeSpan.FromSeconds(30),
                };
                o.Events = new JwtBearerEvents
                {
                    OnAuthenticationFailed = context =>
                    {
                        context.HttpContext.Items[GrpcRefusals.TokenFailureItem] = context.Exception.Message;
                        return Task.CompletedTask;
                    },
                };
            });
        }

        var schemes = Schemes(security);
        services.AddAuthorization(o =>
        {
            foreach (var access in Enum.GetValues<Access>())
            {
                o.AddPolicy(AccessRequirement.PolicyName(access), p => p.AddAuthenticationSchemes(schemes).AddRequirements(new AccessRequirement(access)));
            }

            // An endpoint nobody gave an access level opens to managers alone: a service added later fails closed.
            o.FallbackPolicy = o.GetPolicy(AccessRequirement.PolicyName(Access.Manager));
        });
        services.AddSingleton<IAuthorizationMiddlewareResultHandler, GrpcRefusals>();
        return services;
    }

    /// <summary>Gives every method of a mapped gRPC service the access <see cref="GrpcAccess.Methods"/> names (managers only for any other).</summary>
    public static TBuilder RequireAccessByMethod<TBuilder>(this TBuilder builder)
        where TBuilder : IEndpointConventionBuilder
    {
        builder.Add(endpoint =>
        {
            var method = endpoint.Metadata.OfType<GrpcMethodMetadata>().FirstOrDefault();
            var access = method is not null && GrpcAccess.Methods.TryGetValue(method.Method.FullName, out var known) ? known : Access.Manager;
            endpoint.Metadata.Add(new AuthorizeAttribute(AccessRequirement.PolicyName(access)));
        });
        return builder;
    }

    /// <summary>Gives every endpoint of <paramref name="builder"/> <paramref name="access"/>.</summary>
    public static TBuilder RequireAccess<TBuilder>(this TBuilder builder, Access access)
        where TBuilder : IEndpointConventionBuilder =>
        builder.RequireAuthorization(AccessRequirement.PolicyName(access));
}
