using System.Buffers.Binary;
using System.IO.Compression;
using System.Reflection.Metadata;
using System.Reflection.PortableExecutable;
using System.Text;
using Microsoft.Extensions.Options;
using Quintet.Manager.Configuration;
using Quintet.Manager.Packages;
using Quintet.Manager.Peers;
using Samples.Counter;

namespace Quintet.Manager.Tests;

/// <summary>
/// A package is checked whole before it is deployed: its zip (names, sizes, expansion, checksums) and its assembly (the
/// image read as data, then every type loaded and every method compiled). Each damaged or hostile package is refused as
/// malformed, with what is wrong named, and leaves nothing behind.
/// </summary>
public sealed class PackageValidationTests : IDisposable
{
    private const string Manifest = """{"name":"Counter","version":"1.0.0","assembly":"Counter.dll","components":[{"class":"Samples.Counter.CounterComponent","contracts":["Samples.Counter.ICounter"]}]}""";
    private readonly string _data = Directory.CreateTempSubdirectory("quintet-package-validation-").FullName;
    private readonly PackageStore _store;

    public PackageValidationTests()
    {
        _store = new PackageStore(Options.Create(new ManagerOptions { DataDirectory = _data }), new ManagerIdentity("test", "127.0.0.1", null!, null!, TimeProvider.System, null!));
    }

    private static byte[] CounterAssembly() => File.ReadAllBytes(typeof(CounterComponent).Assembly.Location);

    private static byte[] Zip(CompressionLevel level, params (string Name, byte[] Content)[] files)
    {
        using var buffer = new MemoryStream();
        using (var zip = new ZipArchive(buffer, ZipArchiveMode.Create, leaveOpen: true))
        {
            foreach (var (name, content) in files)
            {
                using var entry = zip.CreateEntry(name, level).Open();
                entry.Write(content);
            }
        }

        return buffer.ToArray();
    }

    private static byte[] Package(byte[]? assembly = null, params (string Name, byte[] Content)[] more) =>
        Zip(CompressionLevel.Optimal, [("Counter.dll", assembly ?? CounterAssembly()), ("quintet-package.json", Encoding.UTF8.GetBytes(Manifest)), .. more]);

    /// <summary>Unzips and loads as a deploy does; returns the refusal.</summary>
    private async Task<PackageException> RefusedAsync(byte[] zip)
    {
        var refused = await Assert.ThrowsAsync<PackageException>(async () =>
        {
            var directory = await _store.ExtractAsync(zip, CancellationToken.None);
            try
            {
                PackageLoader.Load(directory).Unload();
            }
            finally
            {
                PackageStore.Delete(directory);
            }
        });
        Assert.True(refused.IsMalformed, refused.Message);
        Assert.Empty(Directory.Exists(Path.Combine(_data, "packages")) ? Directory.GetFileSystemEntries(Path.Combine(_data, "packages")) : []);
        return refused;
    }

    /// <summary>Where the body of <paramref name="type"/>.<paramref name="method"/> starts in the file, and its IL's offset and length.</summary>
    private static (int ILStart, int ILLength) BodyOf(byte[] image, string type, string method)
    {
        using var pe = new PEReader(new MemoryStream(image));
        var metadata = pe.GetMetadataReader();
        var handle = metadata.MethodDefinitions.Single(h =>
        {
            var m = metadata.GetMethodDefinition(h);
            return metadata.GetString(m.Name) == method && metadata.GetString(metadata.GetTypeDefinition(m.GetDeclaringType()).Name) == type;
        });
        var rva = metadata.GetMethodDefinition(handle).RelativeVirtualAddress;
        var section = pe.PEHeaders.SectionHeaders.Single(s => rva >= s.VirtualAddress && rva < s.VirtualAddress + s.VirtualSize);
        var offset = rva - section.VirtualAddress + section.PointerToRawData;
        var body = pe.GetMethodBody(rva);
        var header = (image[offset] & 0x3) == 0x2 ? 1 : 12;
        return (offset + header, body.GetILBytes()!.Length);
    }

    [Fact]
    public async Task The_intact_counter_package_passes_every_check()
    {
        var directory = await _store.ExtractAsync(Package(), CancellationToken.None);
        var package = PackageLoader.Load(directory);
        Assert.Equal("Counter", package.Name);
        package.Unload();
        PackageStore.Delete(directory);
    }

    [Fact]
    public async Task An_entry_whose_recorded_checksum_is_wrong_is_refused_by_name()
    {
        var zip = Zip(CompressionLevel.NoCompression, ("Counter.dll", CounterAssembly()), ("quintet-package.json", Encoding.UTF8.GetBytes(Manifest)));
        var name = "Counter.dll"u8.ToArray();
        for (var i = 0; i + 46 + name.Length <= zip.Length; i++)
        {
            var crcAt = BinaryPrimitives.ReadUInt32LittleEndian(zip.AsSpan(i)) switch { 0x04034b50 when zip.AsSpan(i + 30, name.Length).SequenceEqual(name) => 14, 0x02014b50 when zip.AsSpan(i + 46, name.Length).SequenceEqual(name) => 16, _ => -1 };
            if (crcAt >= 0)
            {
                zip[i + crcAt] ^= 0x5A;
            }
        }

        var refused = await RefusedAsync(zip);
        Assert.Contains("'Counter.dll' is damaged: its CRC-32", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_assembly_with_bytes_flipped_in_its_middle_is_refused_naming_it()
    {
        var image = CounterAssembly();
        for (var i = (image.Length / 2) - 32; i < (image.Length / 2) + 32; i++)
        {
            image[i] ^= 0xFF;
        }

        var refused = await RefusedAsync(Package(image));
        Assert.Contains("Counter.dll", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_method_body_with_no_instruction_where_one_should_be_is_refused_with_the_method_and_offset()
    {
        var image = CounterAssembly();
        var (start, _) = BodyOf(image, "CounterComponent", "AddAsync");
        image[start] = 0xA6; // no opcode has this value

        var refused = await RefusedAsync(Package(image));
        Assert.Contains("Samples.Counter.CounterComponent.AddAsync: IL_0000", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_method_whose_instructions_the_jit_rejects_is_refused_at_deploy_not_at_its_first_call()
    {
        // Every instruction valid on its own, the method not: pops from an empty stack.
        var image = CounterAssembly();
        var (start, length) = BodyOf(image, "CounterComponent", "GetAsync");
        image.AsSpan(start, length - 1).Fill(0x26);
        image[start + length - 1] = 0x2A;

        var refused = await RefusedAsync(Package(image));
        Assert.Contains("Samples.Counter.CounterComponent.GetAsync does not compile (InvalidProgramException", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_token_naming_a_row_the_metadata_lacks_is_refused()
    {
        var image = CounterAssembly();
        var (start, length) = BodyOf(image, "CounterComponent", "AddAsync");
        var il = image.AsSpan(start, length);
        var call = il.IndexOf((byte)0x28); // call <method token>
        Assert.True(call >= 0);
        BinaryPrimitives.WriteInt32LittleEndian(il[(call + 1)..], 0x0A00FFFF);

        var refused = await RefusedAsync(Package(image));
        Assert.Contains("names metadata token 0x0a00ffff", refused.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("../escape.txt", "'.' or '..'")]
    [InlineData("lib/../../escape.txt", "'.' or '..'")]
    [InlineData("/etc/quintet.txt", "absolute path")]
    [InlineData("C:/quintet.txt", "absolute path")]
    [InlineData("lib\\x.txt", "'\\'")]
    [InlineData("a/./b.txt", "'.' or '..'")]
    [InlineData("bell\u0007.txt", "control characters")]
    public async Task Entries_named_outside_the_package_folder_are_refused(string name, string expected)
    {
        var refused = await RefusedAsync(Package(null, (name, [1, 2, 3])));
        Assert.Contains(expected, refused.Message, StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(_data, "escape.txt")));
    }

    [Fact]
    public async Task A_name_twice_is_refused()
    {
        var refused = await RefusedAsync(Package(null, ("Counter.dll", [1])));
        Assert.Contains("appears twice", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Too_many_entries_are_refused_before_anything_is_unzipped()
    {
        var refused = await RefusedAsync(Package(null, [.. Enumerable.Range(0, PackageStore.MaxEntries).Select(i => ($"empty/{i}", Array.Empty<byte>()))]));
        Assert.Contains($"at most {PackageStore.MaxEntries}", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_entry_that_expands_like_a_zip_bomb_is_refused()
    {
        var refused = await RefusedAsync(Package(null, ("zeros.bin", new byte[16 * 1024 * 1024])));
        Assert.Contains("'zeros.bin' expands", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_package_that_unzips_past_the_bound_is_refused()
    {
        // Random bytes do not compress, so no entry trips the ratio: the total does.
        var noise = new byte[64 * 1024 * 1024];
        new Random(7).NextBytes(noise);
        var refused = await RefusedAsync(Zip(CompressionLevel.NoCompression, [.. Enumerable.Range(0, 5).Select(i => ($"noise{i}.bin", noise))]));
        Assert.Contains($"more than {PackageStore.MaxExtractedBytes / (1024 * 1024)} MiB", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Oversized_manifest_and_qos_file_are_refused()
    {
        var manifest = await RefusedAsync(Zip(CompressionLevel.Optimal, ("Counter.dll", CounterAssembly()), ("quintet-package.json", Encoding.UTF8.GetBytes(Manifest + new string(' ', PackageManifest.MaxBytes)))));
        Assert.Contains($"quintet-package.json is {Manifest.Length + PackageManifest.MaxBytes} bytes; at most {PackageManifest.MaxBytes}", manifest.Message, StringComparison.Ordinal);

        var qos = await RefusedAsync(Package(null, ("quintet-qos.yaml", Encoding.UTF8.GetBytes("# " + new string('x', PackageLoader.MaxQosFileBytes)))));
        Assert.Contains($"at most {PackageLoader.MaxQosFileBytes}", qos.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Bytes_that_are_not_a_zip_are_refused_as_malformed()
    {
        var refused = await RefusedAsync([0x50, 0x4B, 0x03, 0x04, 1, 2, 3]);
        Assert.Contains("not a readable zip archive", refused.Message, StringComparison.Ordinal);
    }

    public void Dispose() => Directory.Delete(_data, recursive: true);
}
