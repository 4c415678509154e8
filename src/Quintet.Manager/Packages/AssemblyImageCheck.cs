using System.Collections.Frozen;
using System.Reflection;
using System.Reflection.Emit;
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;

namespace Quintet.Manager.Packages;

/// <summary>
/// Reads a package's assembly file as data, before the runtime loads any of it: its PE headers, every metadata table
/// and heap, and every method body, instruction by instruction (each opcode defined, each operand inside the body, each
/// metadata token naming a row that exists, each branch and exception region landing on an instruction). A copy damaged
/// on its way (bytes flipped or cut) fails here with the method and offset named, rather than when a call first runs it.
/// Whether the instructions make sense together (stack depths, types) is the JIT's check, which
/// <see cref="PackageLoader"/> runs on every method once this one passed.
/// </summary>
internal static class AssemblyImageCheck
{
    private static readonly FrozenDictionary<ushort, OperandType> Operands = typeof(OpCodes)
        .GetFields(BindingFlags.Public | BindingFlags.Static)
        .Select(f => (OpCode)f.GetValue(null)!)
        .ToFrozenDictionary(op => (ushort)op.Value, op => op.OperandType);

    /// <summary>Checks the assembly file at <paramref name="path"/>, named <paramref name="entry"/> in messages.</summary>
    /// <exception cref="PackageException">It is not a readable .NET assembly; the message names where it is broken.</exception>
    public static void Check(string path, string entry)
    {
        var reading = "its PE headers";
        try
        {
            using var stream = File.OpenRead(path);
            using var pe = new PEReader(stream, PEStreamOptions.PrefetchEntireImage);
            if (!pe.HasMetadata)
            {
                throw Broken(entry, "it is not a .NET assembly (no metadata)");
            }

            reading = "its metadata";
            var metadata = pe.GetMetadataReader();
            if (!metadata.IsAssembly)
            {
                throw Broken(entry, "it is a module without an assembly manifest");
            }

            reading = "its metadata tables";
            ReadTables(metadata);
            reading = "its method bodies";
            foreach (var handle in metadata.MethodDefinitions)
            {
                var method = metadata.GetMethodDefinition(handle);
                if (method.RelativeVirtualAddress != 0)
                {
                    CheckBody(pe, metadata, method, entry);
                }
            }
        }
        catch (Exception e) when (e is BadImageFormatException or InvalidOperationException or ArgumentException)
        {
            // What the readers throw for a header, table, heap or offset they cannot read.
            throw Broken(entry, $"{reading} cannot be read ({e.Message.TrimEnd('.')})", e);
        }
    }

    /// <summary>
    /// Reads every row of the tables the runtime reads, and every name, signature and value they point to: a row whose
    /// index names a row that is not there, or a heap offset past its heap, fails here.
    /// </summary>
    private static void ReadTables(MetadataReader md)
    {
        var assembly = md.GetAssemblyDefinition();
        Heaps(md, assembly.Name, assembly.Culture, assembly.PublicKey);
        foreach (var handle in md.TypeDefinitions)
        {
            var type = md.GetTypeDefinition(handle);
            Heaps(md, type.Name, type.Namespace);
            Rows(md, type.BaseType, type.GetDeclaringType());
            foreach (var field in type.GetFields())
            {
                Rows(md, field);
                var definition = md.GetFieldDefinition(field);
                Heaps(md, definition.Name, definition.Signature, definition.GetMarshallingDescriptor());
                Rows(md, definition.GetDefaultValue());
            }

            foreach (var method in type.GetMethods())
            {
                Rows(md, method);
                var definition = md.GetMethodDefinition(method);
                Heaps(md, definition.Name, definition.Signature);
                foreach (var parameter in definition.GetParameters())
                {
                    Rows(md, parameter);
                    Heaps(md, md.GetParameter(parameter).Name);
                }

                Generic(md, definition.GetGenericParameters());
                var import = definition.GetImport();
                Heaps(md, import.Name);
                Rows(md, import.Module);
            }

            foreach (var implementation in type.GetInterfaceImplementations())
            {
                Rows(md, implementation);
                Rows(md, md.GetInterfaceImplementation(implementation).Interface);
            }

            foreach (var implementation in type.GetMethodImplementations())
            {
                Rows(md, implementation);
                var row = md.GetMethodImplementation(implementation);
                Rows(md, row.MethodBody, row.MethodDeclaration);
            }

            foreach (var property in type.GetProperties())
            {
                Rows(md, property);
                var definition = md.GetPropertyDefinition(property);
                Heaps(md, definition.Name, definition.Signature);
                var accessors = definition.GetAccessors();
                Rows(md, accessors.Getter, accessors.Setter);
            }

            foreach (var handleOfEvent in type.GetEvents())
            {
                Rows(md, handleOfEvent);
                var definition = md.GetEventDefinition(handleOfEvent);
                Heaps(md, definition.Name);
                var accessors = definition.GetAccessors();
                Rows(md, definition.Type, accessors.Adder, accessors.Remover, accessors.Raiser);
            }

            Generic(md, type.GetGenericParameters());
            _ = type.GetLayout();
        }

        foreach (var handle in md.TypeReferences)
        {
            var reference = md.GetTypeReference(handle);
            Heaps(md, reference.Name, reference.Namespace);
            Rows(md, reference.ResolutionScope);
        }

        foreach (var handle in md.MemberReferences)
        {
            var member = md.GetMemberReference(handle);
            Heaps(md, member.Name, member.Signature);
            Rows(md, member.Parent);
        }

        foreach (var handle in md.CustomAttributes)
        {
            var attribute = md.GetCustomAttribute(handle);
            Heaps(md, attribute.Value);
            Rows(md, attribute.Parent, attribute.Constructor);
        }

        foreach (var handle in md.AssemblyReferences)
        {
            var reference = md.GetAssemblyReference(handle);
            Heaps(md, reference.Name, reference.Culture, reference.PublicKeyOrToken, reference.HashValue);
        }

        for (var row = 1; row <= md.GetTableRowCount(TableIndex.TypeSpec); row++)
        {
            Heaps(md, md.GetTypeSpecification(MetadataTokens.TypeSpecificationHandle(row)).Signature);
        }

        for (var row = 1; row <= md.GetTableRowCount(TableIndex.MethodSpec); row++)
        {
            var specification = md.GetMethodSpecification(MetadataTokens.MethodSpecificationHandle(row));
            Heaps(md, specification.Signature);
            Rows(md, specification.Method);
        }

        for (var row = 1; row <= md.GetTableRowCount(TableIndex.StandAloneSig); row++)
        {
            Heaps(md, md.GetStandaloneSignature(MetadataTokens.StandaloneSignatureHandle(row)).Signature);
        }

        for (var row = 1; row <= md.GetTableRowCount(TableIndex.Constant); row++)
        {
            var constant = md.GetConstant(MetadataTokens.ConstantHandle(row));
            Heaps(md, constant.Value);
            Rows(md, constant.Parent);
        }

        foreach (var handle in md.DeclarativeSecurityAttributes)
        {
            var security = md.GetDeclarativeSecurityAttribute(handle);
            Heaps(md, security.PermissionSet);
            Rows(md, security.Parent);
        }

        foreach (var handle in md.ManifestResources)
        {
            var resource = md.GetManifestResource(handle);
            Heaps(md, resource.Name);
            Rows(md, resource.Implementation);
        }

        foreach (var handle in md.ExportedTypes)
        {
            var exported = md.GetExportedType(handle);
            Heaps(md, exported.Name, exported.Namespace);
            Rows(md, exported.Implementation);
        }
    }

    private static void Generic(MetadataReader md, GenericParameterHandleCollection parameters)
    {
        foreach (var handle in parameters)
        {
            Rows(md, handle);
            var parameter = md.GetGenericParameter(handle);
            Heaps(md, parameter.Name);
            Rows(md, parameter.Parent);
            foreach (var constraint in parameter.GetConstraints())
            {
                Rows(md, constraint);
                Rows(md, md.GetGenericParameterConstraint(constraint).Type);
            }
        }
    }

    /// <summary>Fails unless every non-nil handle names a row its table has.</summary>
    private static void Rows(MetadataReader md, params ReadOnlySpan<EntityHandle> handles)
    {
        foreach (var handle in handles)
        {
            if (!handle.IsNil && !Exists(md, MetadataTokens.GetToken(handle)))
            {
                throw new BadImageFormatException($"a metadata row names row {MetadataTokens.GetRowNumber(handle)} of table {handle.Kind}, which has {md.GetTableRowCount((TableIndex)(MetadataTokens.GetToken(handle) >>> 24))} rows");
            }
        }
    }

    /// <summary>Reads names and blobs: one past its heap throws.</summary>
    private static void Heaps(MetadataReader md, params ReadOnlySpan<Handle> handles)
    {
        foreach (var handle in handles)
        {
            if (handle.Kind == HandleKind.String)
            {
                _ = md.GetString((StringHandle)handle);
            }
            else if (handle.Kind == HandleKind.Blob)
            {
                _ = md.GetBlobReader((BlobHandle)handle);
            }
        }
    }

    private static void CheckBody(PEReader pe, MetadataReader metadata, MethodDefinition method, string entry)
    {
        var where = NameOf(metadata, method);
        MethodBodyBlock body;
        try
        {
            body = pe.GetMethodBody(method.RelativeVirtualAddress);
        }
        catch (BadImageFormatException e)
        {
            throw Broken(entry, $"the body of {where} cannot be read: {e.Message}", e);
        }

        if (!body.LocalSignature.IsNil && !Exists(metadata, MetadataTokens.GetToken(body.LocalSignature)))
        {
            throw Broken(entry, $"{where} names locals that are not in the metadata");
        }

        var il = body.GetILReader();
        var length = il.Length;
        var starts = new HashSet<int>();
        var targets = new List<(int Offset, int Target)>();
        while (il.RemainingBytes > 0)
        {
            var offset = il.Offset;
            starts.Add(offset);
            ushort code = il.ReadByte();
            if (code == 0xFE)
            {
                code = il.RemainingBytes > 0 ? (ushort)(0xFE00 | il.ReadByte()) : throw Broken(entry, $"{where}: the instruction at IL_{offset:x4} is cut off");
            }

            if (!Operands.TryGetValue(code, out var operand))
            {
                throw Broken(entry, $"{where}: IL_{offset:x4} holds 0x{code:x2}, which is no instruction");
            }

            var size = SizeOf(operand);
            if (il.RemainingBytes < size)
            {
                throw Broken(entry, $"{where}: the operand at IL_{offset:x4} runs past the end of the method's body");
            }

            switch (operand)
            {
                case OperandType.InlineBrTarget:
                    var far = il.ReadInt32();
                    targets.Add((offset, il.Offset + far));
                    break;
                case OperandType.ShortInlineBrTarget:
                    var near = il.ReadSByte();
                    targets.Add((offset, il.Offset + near));
                    break;
                case OperandType.InlineSwitch:
                    var cases = il.ReadUInt32();
                    if (cases > (uint)il.RemainingBytes / 4)
                    {
                        throw Broken(entry, $"{where}: the switch at IL_{offset:x4} has more cases than the body has bytes");
                    }

                    var jumps = new int[cases];
                    for (var i = 0; i < jumps.Length; i++)
                    {
                        jumps[i] = il.ReadInt32();
                    }

                    var next = il.Offset;
                    foreach (var jump in jumps)
                    {
                        targets.Add((offset, next + jump));
                    }

                    break;
                case OperandType.InlineField or OperandType.InlineMethod or OperandType.InlineType or OperandType.InlineTok or OperandType.InlineSig or OperandType.InlineString:
                    var token = il.ReadInt32();
                    if (!Exists(metadata, token))
                    {
                        throw Broken(entry, $"{where}: IL_{offset:x4} names metadata token 0x{token:x8}, which is not in the assembly");
                    }

                    break;
                default:
                    il.Offset += size;
                    break;
            }
        }

        foreach (var (offset, target) in targets)
        {
            if (!starts.Contains(target))
            {
                throw Broken(entry, $"{where}: the branch at IL_{offset:x4} goes to IL_{target:x4}, which is not the start of an instruction");
            }
        }

        foreach (var region in body.ExceptionRegions)
        {
            if (!Lands(starts, length, region.TryOffset, region.TryLength) || !Lands(starts, length, region.HandlerOffset, region.HandlerLength)
                || (region.Kind == ExceptionRegionKind.Filter && !starts.Contains(region.FilterOffset))
                || (region.Kind == ExceptionRegionKind.Catch && !Exists(metadata, MetadataTokens.GetToken(region.CatchType))))
            {
                throw Broken(entry, $"{where}: an exception region (try at IL_{region.TryOffset:x4}, handler at IL_{region.HandlerOffset:x4}) does not fit its body");
            }
        }
    }

    private static bool Lands(HashSet<int> starts, int length, int offset, int size) =>
        starts.Contains(offset) && size > 0 && offset + size <= length && (offset + size == length || starts.Contains(offset + size));

    /// <summary>Whether <paramref name="token"/> names a row (or user string) this assembly's metadata has.</summary>
    private static bool Exists(MetadataReader metadata, int token)
    {
        var row = token & 0x00FFFFFF;
        var table = token >>> 24;
        if (table == 0x70)
        {
            // A user string: an offset into its heap.
            return row < metadata.GetHeapSize(HeapIndex.UserString);
        }

        return row > 0 && table <= (int)TableIndex.CustomDebugInformation && row <= metadata.GetTableRowCount((TableIndex)table);
    }

    private static int SizeOf(OperandType operand) => operand switch
    {
        OperandType.InlineNone => 0,
        OperandType.ShortInlineBrTarget or OperandType.ShortInlineI or OperandType.ShortInlineVar => 1,
        OperandType.InlineVar => 2,
        OperandType.InlineI8 or OperandType.InlineR => 8,
        OperandType.InlineSwitch => 4,
        _ => 4,
    };

    private static string NameOf(MetadataReader metadata, MethodDefinition method)
    {
        var type = metadata.GetTypeDefinition(method.GetDeclaringType());
        var ns = metadata.GetString(type.Namespace);
        return $"{(ns.Length > 0 ? ns + "." : string.Empty)}{metadata.GetString(type.Name)}.{metadata.GetString(method.Name)}";
    }

    private static PackageException Broken(string entry, string what, Exception? cause = null)
    {
        var message = $"{entry} is damaged, or not a .NET assembly: {what}. Rebuild the package and deploy it again.";
        return cause is null ? new PackageException(message) { IsMalformed = true } : new PackageException(message, cause) { IsMalformed = true };
    }
}
