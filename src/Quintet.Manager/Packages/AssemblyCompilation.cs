using System.Reflection;
using System.Runtime.CompilerServices;

namespace Quintet.Manager.Packages;

/// <summary>
/// Loads every type of a package's assembly and has the JIT compile every method it can without type arguments, once,
/// at deploy: a type that does not load, a method whose IL the JIT rejects or whose tokens name what is not there is
/// refused then, with its name, instead of failing the first call that reaches it on every manager. Static
/// constructors are not run; generic methods (compiled per type argument) are left to <see cref="AssemblyImageCheck"/>,
/// which read their IL.
/// </summary>
internal static class AssemblyCompilation
{
    private const BindingFlags Declared = BindingFlags.DeclaredOnly | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Instance | BindingFlags.Static;

    /// <summary>Loads and compiles <paramref name="assembly"/> (the package's file <paramref name="entry"/>).</summary>
    /// <exception cref="PackageException">A type or method does not load or compile (<see cref="PackageException.IsMalformed"/>).</exception>
    public static void CompileAll(Assembly assembly, string entry)
    {
        Type[] types;
        try
        {
            types = assembly.GetTypes();
        }
        catch (ReflectionTypeLoadException e)
        {
            var first = e.LoaderExceptions.FirstOrDefault(x => x is not null);
            throw Refused(entry, $"{e.Types.Count(t => t is null)} of its types do not load ({first?.GetType().Name}: {first?.Message})", e);
        }

        ReadAttributes(entry, assembly.FullName ?? entry, () => assembly.GetCustomAttributesData());
        foreach (var type in types)
        {
            // Attributes are read by the runtime and by serializers (protobuf-net's [ProtoMember]) when a call first needs them.
            ReadAttributes(entry, type.FullName ?? type.Name, () => type.GetCustomAttributesData());
            foreach (var member in type.GetMembers(Declared))
            {
                ReadAttributes(entry, $"{type.FullName}.{member.Name}", () => member.GetCustomAttributesData());
            }
        }

        foreach (var type in types.Where(t => !t.ContainsGenericParameters))
        {
            foreach (var method in type.GetMethods(Declared).Cast<MethodBase>().Concat(type.GetConstructors(Declared)))
            {
                if (method.ContainsGenericParameters || method.IsAbstract || (method.Attributes & MethodAttributes.PinvokeImpl) != 0
                    || (method.MethodImplementationFlags & (MethodImplAttributes.InternalCall | MethodImplAttributes.Runtime)) != 0)
                {
                    continue;
                }

                try
                {
                    RuntimeHelpers.PrepareMethod(method.MethodHandle);
                }
                catch (Exception e) when (Calls.ComponentFailure.IsBrokenCode(e))
                {
                    throw Refused(entry, $"{type.FullName}.{method.Name} does not compile ({e.GetType().Name}: {e.Message})", e);
                }
            }
        }
    }

    private static void ReadAttributes(string entry, string owner, Func<IList<CustomAttributeData>> read)
    {
        try
        {
            foreach (var attribute in read())
            {
                _ = attribute.ConstructorArguments;
                _ = attribute.NamedArguments;
            }
        }
        catch (Exception e) when (e is CustomAttributeFormatException || Calls.ComponentFailure.IsBrokenCode(e))
        {
            throw Refused(entry, $"the attributes of {owner} cannot be read ({e.GetType().Name}: {e.Message})", e);
        }
    }

    private static PackageException Refused(string entry, string what, Exception cause) =>
        new($"{entry} is damaged or does not run on this manager: {what}. Rebuild the package and deploy it again.", cause) { IsMalformed = true };
}
