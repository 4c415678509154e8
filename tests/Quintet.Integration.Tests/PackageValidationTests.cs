using System.Buffers.Binary;
using System.IO.Compression;
using System.Text;
using Google.Protobuf;
using Grpc.Core;
using Quintet.Client;
using Quintet.Integration.Tests.Probe;
using Quintet.Protocol.Admin;
using Quintet.TestingHost;
using Samples.Counter;

namespace Quintet.Integration.Tests;

/// <summary>
/// Packages damaged on their way to the cluster (a zip entry whose checksum is wrong, an assembly with bytes flipped) are
/// refused at deploy, on the manager asked, with INVALID_ARGUMENT naming what is wrong, and reach no other manager.
/// </summary>
public class PackageValidationTests(ITestOutputHelper output)
{
    private static ComponentAdmin.ComponentAdminClient Admin(ManagerProcess manager) => new(manager.Channel);

    /// <summary>The Probe package with its assembly's middle 64 bytes inverted: a copy damaged in transit or on disk.</summary>
    internal static byte[] ProbeWithFlippedBytes()
    {
        var assembly = typeof(ProbeComponent).Assembly;
        var bytes = File.ReadAllBytes(assembly.Location);
        for (var i = (bytes.Length / 2) - 32; i < (bytes.Length / 2) + 32; i++)
        {
            bytes[i] ^= 0xFF;
        }

        return Zip(("CoordinationProbe.dll", bytes), ("quintet-package.json", File.ReadAllBytes(Path.Combine(Path.GetDirectoryName(assembly.Location)!, "CoordinationProbe.package", "quintet-package.json"))));
    }

    /// <summary>The Probe package, intact but for the checksum its zip records for the assembly.</summary>
    internal static byte[] ProbeWithWrongChecksum() => WithWrongCrc(PackageArchive.ForAssembly(typeof(ProbeComponent).Assembly), "CoordinationProbe.dll");

    /// <summary>Zips the files, stored as they are (no compression), each at the zip's root.</summary>
    internal static byte[] Zip(params (string Name, byte[] Content)[] files)
    {
        using var buffer = new MemoryStream();
        using (var zip = new ZipArchive(buffer, ZipArchiveMode.Create, leaveOpen: true))
        {
            foreach (var (name, content) in files)
            {
                using var entry = zip.CreateEntry(name, CompressionLevel.NoCompression).Open();
                entry.Write(content);
            }
        }

        return buffer.ToArray();
    }

    /// <summary>Changes the CRC-32 the zip records for <paramref name="entryName"/>, in its local header and in the central directory.</summary>
    internal static byte[] WithWrongCrc(byte[] zip, string entryName)
    {
        var copy = (byte[])zip.Clone();
        var name = Encoding.UTF8.GetBytes(entryName);
        var changed = 0;
        for (var i = 0; i + 46 + name.Length <= copy.Length; i++)
        {
            var signature = BinaryPrimitives.ReadUInt32LittleEndian(copy.AsSpan(i));
            var (crcAt, nameAt) = signature switch
            {
                0x04034b50 => (14, 30),
                0x02014b50 => (16, 46),
                _ => (-1, -1),
            };
            if (crcAt >= 0 && copy.AsSpan(i + nameAt, name.Length).SequenceEqual(name))
            {
                copy[i + crcAt] ^= 0x5A;
                changed++;
            }
        }

        Assert.Equal(2, changed);
        return copy;
    }

    private static async Task<string> PackagesOfAsync(ManagerProcess manager) =>
        string.Join(", ", (await Admin(manager).ListPackagesAsync(new ListPackagesRequest(), deadline: DateTime.UtcNow.AddSeconds(30))).Packages.Select(p => p.Name).Order(StringComparer.Ordinal));

    [Fact]
    public Task A_damaged_package_is_refused_at_deploy_with_what_is_wrong_and_no_manager_changes() =>
        ClusterTest.RunAsync(output, ClusterTest.Options(2), async cluster =>
        {
            await cluster.WaitForGroupViewAsync(cluster.Managers);
            var (first, second) = (cluster.Managers[0], cluster.Managers[1]);
            await Admin(first).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(ComponentCallTests.CounterPackage()) }, deadline: DateTime.UtcNow.AddSeconds(30));
            await ClusterTest.WaitForPackagesAsync(cluster.Managers, "Counter");
            using var client = QuintetClient.Over(second.Channel);
            var counter = client.GetComponent<ICounter>("kept");
            Assert.Equal(3, (await counter.AddAsync(new AddRequest { Amount = 3 }, CancellationToken.None)).Value);

            foreach (var (what, zip, expected) in new[]
            {
                ("wrong checksum", ProbeWithWrongChecksum(), "CoordinationProbe.dll"),
                ("64 bytes flipped", ProbeWithFlippedBytes(), "CoordinationProbe.dll"),
            })
            {
                var refused = await Assert.ThrowsAsync<RpcException>(async () =>
                    await Admin(first).DeployPackageAsync(new DeployPackageRequest { PackageZip = ByteString.CopyFrom(zip) }, deadline: DateTime.UtcNow.AddSeconds(60)));
                output.WriteLine($"{what}: {refused.StatusCode}: {refused.Status.Detail}");
                Assert.Equal(StatusCode.InvalidArgument, refused.StatusCode);
                Assert.Contains(expected, refused.Status.Detail, StringComparison.Ordinal);
            }

            // Nothing changed anywhere: the same packages on both managers (a deploy reaches the other within a second
            // or two; it had that time while the second refusal was checked), and the counter answers as before.
            await Task.Delay(TimeSpan.FromSeconds(2));
            Assert.Equal("Counter", await PackagesOfAsync(first));
            Assert.Equal("Counter", await PackagesOfAsync(second));
            Assert.Equal(3, (await counter.GetAsync(new GetRequest(), CancellationToken.None)).Value);
        });
}
