using System.Collections;
using System.Reflection;
using System.Runtime.Loader;
using ProtoBuf.Meta;

namespace Quintet.Manager.Packages;

/// <summary>
/// Removes an unloading package's types from the process-wide caches protobuf-net keeps by type. protobuf-net (3.4) is
/// shared by the manager and every package, and the first message of a type that any <see cref="RuntimeTypeModel"/>
/// handles, whichever model and method, records it in static tables that are never pruned: an entry in one of them
/// holds the package's assembly, so its load context is never collected and each redeploy leaks the whole package.
/// protobuf-net has no API to forget a type, so the tables are reached by their private names; if an upgrade renames
/// one, it is skipped here and <c>PackageLoaderTests</c> fails (the unload of a package whose operations were called).
/// </summary>
internal static class ProtobufTypeCaches
{
    // Each is a cache, recomputed on a miss: removing an entry costs the next message of that type a lookup, nothing more.
    private static readonly IDictionary[] Tables = new[]
    {
        // Type to DynamicStub.ConcreteStub<T>: how a Type reaches the generic serializer (protobuf-net.Core).
        Find(typeof(TypeModel).Assembly, "ProtoBuf.Internal.DynamicStub", "s_byType"),

        // Type to its repeated-serializer stub (empty for a message), asked of every type a model adds.
        Find(typeof(RuntimeTypeModel).Assembly, "ProtoBuf.Serializers.RepeatedSerializers", "s_knownTypes"),

        // Module to its [CompatibilityLevel], read when a model adds a type of that module.
        Find(typeof(RuntimeTypeModel).Assembly, "ProtoBuf.Internal.TypeCompatibilityHelper", "s_ByModule"),
    }.OfType<IDictionary>().ToArray();

    /// <summary>The number of protobuf-net's tables found in the loaded version; three when this code still matches it.</summary>
    public static int Found => Tables.Length;

    /// <summary>Removes every entry that holds a type or module of <paramref name="context"/>; called as it starts unloading.</summary>
    public static void Forget(AssemblyLoadContext context)
    {
        foreach (var table in Tables)
        {
            // protobuf-net writes each table under a lock on the table itself (readers of its Hashtables take none),
            // so removing under the same lock is as safe as its own writes.
            lock (table)
            {
                var held = table.Keys.Cast<object>().Where(key => Holds(context, key) || Holds(context, table[key])).ToList();
                foreach (var key in held)
                {
                    table.Remove(key);
                }
            }
        }
    }

    private static IDictionary? Find(Assembly assembly, string typeName, string fieldName) =>
        assembly.GetType(typeName)?.GetField(fieldName, BindingFlags.NonPublic | BindingFlags.Static)?.GetValue(null) as IDictionary;

    private static bool Holds(AssemblyLoadContext context, object? value) => value switch
    {
        null => false,
        Type type => Holds(context, type),
        Module module => AssemblyLoadContext.GetLoadContext(module.Assembly) == context,
        _ => Holds(context, value.GetType()),
    };

    /// <summary>Whether the type is the context's, or is built on one of its types (<c>List&lt;T&gt;</c>, <c>T[]</c>, <c>ConcreteStub&lt;T&gt;</c>).</summary>
    private static bool Holds(AssemblyLoadContext context, Type type) =>
        type.HasElementType
            ? Holds(context, type.GetElementType()!)
            : AssemblyLoadContext.GetLoadContext(type.Assembly) == context || (type.IsConstructedGenericType && type.GenericTypeArguments.Any(t => Holds(context, t)));
}
