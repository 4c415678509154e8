using System.Security.Claims;
using Microsoft.AspNetCore.Authentication.Certificate;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Quintet.Manager.Security;

namespace Quintet.Manager.Tests.Security;

public class GrpcAccessTests
{
    [Fact]
    public void Every_administration_method_has_an_access_level_and_deploying_code_is_the_admins_alone()
    {
        var methods = GrpcAccess.AdministrationServices.SelectMany(s => s.Methods.Select(m => $"/{s.FullName}/{m.Name}")).ToList();
        Assert.Empty(methods.Except(GrpcAccess.Methods.Keys));
        Assert.Empty(GrpcAccess.Methods.Keys.Except(methods));
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentAdmin/DeployPackage"]);
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentAdmin/UndeployPackage"]);
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentAdmin/SetQos"]);
        Assert.Equal(Access.Operator, GrpcAccess.Methods["/quintet.admin.v1.ComponentAdmin/MigrateInstance"]);
        Assert.Equal(Access.Reader, GrpcAccess.Methods["/quintet.admin.v1.ClusterAdmin/ListManagers"]);
        Assert.Equal(Access.Reader, GrpcAccess.Methods["/quintet.admin.v1.ComponentRoles/ListRoleAssignments"]);
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentRoles/AddRoleMembers"]);
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentRoles/RemoveRoleMembers"]);
        Assert.Equal(Access.Admin, GrpcAccess.Methods["/quintet.admin.v1.ComponentRoles/SetRoleMembers"]);

        // Whoever may call components may follow the managers' view the client needs to call them.
        Assert.Equal(Access.Caller, GrpcAccess.Methods["/quintet.cluster.v1.ClusterView/WatchManagers"]);

        // The views a console is built on read and change nothing: a reader sees them all.
        string[] views =
        [
            "/quintet.admin.v1.ClusterAdmin/GetClusterTree", "/quintet.admin.v1.ClusterAdmin/ListGroups", "/quintet.admin.v1.ClusterAdmin/ListManagerLog",
            "/quintet.admin.v1.ClusterAdmin/WatchStatistics", "/quintet.admin.v1.ClusterAdmin/ListCheckpointStores",
            "/quintet.admin.v1.SharedStructureAdmin/ListSharedStructures", "/quintet.admin.v1.SharedStructureAdmin/BrowseSharedStructure",
            "/quintet.admin.v1.CoordinationAdmin/ListCoordination",
        ];
        Assert.All(views, method => Assert.Equal(Access.Reader, GrpcAccess.Methods[method]));
    }

    [Theory]
    [InlineData("reader", "Reader", true)]
    [InlineData("reader", "Operator", false)]
    [InlineData("operator", "Reader", true)]
    [InlineData("operator", "Operator", true)]
    [InlineData("operator", "Admin", false)]
    [InlineData("admin", "Admin", true)]
    [InlineData("admin", "Manager", false)]
    [InlineData("auditor", "Caller", true)]
    [InlineData("auditor", "Reader", false)]
    [InlineData("Admin", "Admin", false)]
    public void A_role_opens_its_level_and_those_below(string role, string access, bool open)
    {
        var user = Certificate(role);
        Assert.Equal(open, AccessRequirement.IsOpenTo(Enum.Parse<Access>(access), user));
    }

    [Fact]
    public void A_manager_certificate_opens_everything_but_a_token_claiming_to_be_a_manager_opens_nothing_more()
    {
        var manager = new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "manager-1"), new Claim(CallerClaims.Manager, "true")], CertificateAuthenticationDefaults.AuthenticationScheme, ClaimTypes.Name, ClaimTypes.Role));
        Assert.All(Enum.GetValues<Access>(), access => Assert.True(AccessRequirement.IsOpenTo(access, manager)));

        var pretender = new ClaimsPrincipal(new ClaimsIdentity([new Claim("sub", "eve"), new Claim(CallerClaims.Manager, "true")], JwtBearerDefaults.AuthenticationScheme, "sub", "roles"));
        Assert.True(AccessRequirement.IsOpenTo(Access.Caller, pretender));
        Assert.False(AccessRequirement.IsOpenTo(Access.Manager, pretender));
        Assert.False(AccessRequirement.IsOpenTo(Access.Reader, pretender));

        var anonymous = new ClaimsPrincipal(new ClaimsIdentity());
        Assert.True(AccessRequirement.IsOpenTo(Access.Anyone, anonymous));
        Assert.False(AccessRequirement.IsOpenTo(Access.Caller, anonymous));
    }

    private static ClaimsPrincipal Certificate(string role) =>
        new(new ClaimsIdentity([new Claim(ClaimTypes.Name, "user"), new Claim(ClaimTypes.Role, role)], CertificateAuthenticationDefaults.AuthenticationScheme, ClaimTypes.Name, ClaimTypes.Role));
}
