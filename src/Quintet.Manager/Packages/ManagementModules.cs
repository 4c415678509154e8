using System.Reflection;
using System.Text.Json;
using ProtoBuf;
using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>
/// Reads the management modules (<see cref="ManagementContractAttribute"/>) and debug modules
/// (<see cref="ComponentDebugModuleAttribute"/>) of a package's classes when it is loaded, refusing at deploy what the
/// console could not present or the managers could not run.
/// </summary>
internal static class ManagementModules
{
    /// <summary>The administrative roles, the weakest first (<see cref="Security.GrpcAccess.Roles"/>).</summary>
    private static readonly string[] RoleOrder = [Security.GrpcAccess.Roles.Reader, Security.GrpcAccess.Roles.Operator, Security.GrpcAccess.Roles.Admin];

    /// <summary>A management call's JSON: field names as System.Text.Json's web defaults write them, enums by name (or number).</summary>
    public static JsonSerializerOptions Json { get; } = new(JsonSerializerDefaults.Web) { MaxDepth = 16, Converters = { new System.Text.Json.Serialization.JsonStringEnumConverter() } };

    /// <summary>Whether <paramref name="role"/> opens what needs <paramref name="needed"/>.</summary>
    public static bool Covers(string role, string needed) => Array.IndexOf(RoleOrder, role) >= Array.IndexOf(RoleOrder, needed) && Array.IndexOf(RoleOrder, needed) >= 0;

    /// <summary>The roles that open what needs <paramref name="needed"/>, the strongest first.</summary>
    public static IReadOnlyList<string> RolesCovering(string needed) => [.. RoleOrder.Where(r => Covers(r, needed)).Reverse()];

    /// <summary>How one operation of a management contract is presented and opened.</summary>
    /// <exception cref="PackageException">A role that is not an administrative one, an action open to readers, or a request the console could not ask for.</exception>
    public static ManagementOperation Describe(MethodInfo method, string name, ManagementContractAttribute contract, Type requestType, string field)
    {
        var isView = method.GetCustomAttribute<ReadOnlyOperationAttribute>() is not null;
        var presentation = method.GetCustomAttribute<ManagementOperationAttribute>();
        if (!RoleOrder.Contains(contract.ActionsRole, StringComparer.Ordinal) || contract.ActionsRole == Security.GrpcAccess.Roles.Reader)
        {
            throw new PackageException($"{field}: [ManagementContract] ActionsRole '{contract.ActionsRole}' is not 'operator' or 'admin'; an action changes the instance, which a reader may not.");
        }

        var role = presentation?.Role is { Length: > 0 } own ? own : isView ? Security.GrpcAccess.Roles.Reader : contract.ActionsRole;
        if (!RoleOrder.Contains(role, StringComparer.Ordinal))
        {
            throw new PackageException($"{field}: [ManagementOperation] Role '{role}' is not one of the administrative roles {string.Join(", ", RoleOrder)}.");
        }

        if (!isView && role == Security.GrpcAccess.Roles.Reader)
        {
            throw new PackageException($"{field}: {name} changes the instance (it is not marked [ReadOnlyOperation]), so it needs 'operator' or 'admin', not 'reader'.");
        }

        var fields = new List<ManagementField>();
        foreach (var property in requestType.GetProperties(BindingFlags.Public | BindingFlags.Instance).Where(p => p.GetCustomAttribute<ProtoMemberAttribute>() is not null))
        {
            var kind = KindOf(property.PropertyType)
                ?? throw new PackageException($"{field}: the request {requestType.FullName} of management operation {name} has field {property.Name} of type {property.PropertyType.Name}; a management request holds only strings, numbers, booleans and enums, which the console asks for in a form.");
            if (property.SetMethod is not { IsPublic: true })
            {
                throw new PackageException($"{field}: the request {requestType.FullName} of management operation {name} has field {property.Name} without a public setter; the managers fill it from the administrator's form.");
            }

            var values = property.PropertyType.IsEnum ? Enum.GetNames(property.PropertyType) : [];
            fields.Add(new ManagementField(Json.PropertyNamingPolicy!.ConvertName(property.Name), kind, values));
        }

        return new ManagementOperation(isView, role, presentation?.Label is { Length: > 0 } label ? label : name, presentation?.Description ?? "", isView ? "" : presentation?.Confirmation ?? "", fields);
    }

    /// <summary>The debug module <paramref name="type"/> names, made once; null when it names none.</summary>
    /// <exception cref="PackageException">The named type is not a debug module of the class, or cannot be made.</exception>
    public static ComponentDebugModule? LoadDebugModule(Type type, string field)
    {
        if (type.GetCustomAttribute<ComponentDebugModuleAttribute>() is not { } attribute)
        {
            return null;
        }

        var moduleType = attribute.ModuleType;
        var expected = typeof(DebugModule<>).MakeGenericType(type);
        if (!expected.IsAssignableFrom(moduleType) || moduleType.IsAbstract)
        {
            throw new PackageException($"{field}: [ComponentDebugModule] names {moduleType.FullName}, which is not a non-abstract class derived from Quintet.Components.DebugModule<{type.FullName}>.");
        }

        if (moduleType.GetConstructor(Type.EmptyTypes) is null)
        {
            throw new PackageException($"{field}: the debug module {moduleType.FullName} needs a public constructor without parameters.");
        }

        try
        {
            return (ComponentDebugModule)Activator.CreateInstance(moduleType)!;
        }
        catch (TargetInvocationException e)
        {
            throw new PackageException($"{field}: the constructor of the debug module {moduleType.FullName} threw {e.InnerException?.GetType().Name}: {e.InnerException?.Message}", e);
        }
    }

    private static string? KindOf(Type type)
    {
        type = Nullable.GetUnderlyingType(type) ?? type;
        if (type.IsEnum)
        {
            return "enum";
        }

        return Type.GetTypeCode(type) switch
        {
            TypeCode.String => "string",
            TypeCode.Boolean => "boolean",
            TypeCode.SByte or TypeCode.Byte or TypeCode.Int16 or TypeCode.UInt16 or TypeCode.Int32 or TypeCode.UInt32 or TypeCode.Int64 or TypeCode.UInt64 => "integer",
            TypeCode.Single or TypeCode.Double or TypeCode.Decimal => "number",
            _ => null,
        };
    }
}
