using System.Collections.Frozen;
using System.Runtime.Serialization;
using Akka.Actor;
using Akka.Serialization;
using Google.Protobuf;
using Google.Protobuf.Reflection;

namespace Quintet.Core.Serialization;

/// <summary>
/// The Akka.NET serializer for every protobuf message Quintet sends between managers. The manifest is the
/// message's proto full name (<c>quintet.internal.v1.ManagerReportRequest</c>), never a .NET type name, and only
/// messages of the proto files listed in the system's <see cref="WireMessageSetup"/> are accepted on receipt.
/// </summary>
public sealed class WireSerializer : SerializerWithStringManifest
{
    /// <summary>The identifier of this serializer in Akka.NET's serializer table.</summary>
    public const int SerializerId = 451;

    private readonly FrozenDictionary<string, MessageParser> _parsers;

    /// <summary>Created by Akka.NET from configuration.</summary>
    /// <param name="system">The actor system whose <see cref="WireMessageSetup"/> lists the allowed messages.</param>
    public WireSerializer(ExtendedActorSystem system)
        : base(system)
    {
        ArgumentNullException.ThrowIfNull(system);
        var setup = system.Settings.Setup.Get<WireMessageSetup>();
        var files = setup.HasValue ? setup.Value.Files : [];
        _parsers = files
            .SelectMany(file => AllMessages(file.MessageTypes))
            .Where(message => message.Parser is not null)
            .DistinctBy(message => message.FullName)
            .ToFrozenDictionary(message => message.FullName, message => message.Parser, StringComparer.Ordinal);
    }

    /// <inheritdoc />
    public override int Identifier => SerializerId;

    /// <summary>The proto full names this serializer accepts.</summary>
    public IReadOnlyCollection<string> AllowedMessages => _parsers.Keys;

    /// <inheritdoc />
    public override string Manifest(object o) => AsMessage(o).Descriptor.FullName;

    /// <inheritdoc />
    public override byte[] ToBinary(object obj)
    {
        var message = AsMessage(obj);
        if (!_parsers.ContainsKey(message.Descriptor.FullName))
        {
            throw new SerializationException(
                $"Protobuf message '{message.Descriptor.FullName}' is not registered for the cluster wire; add its file descriptor to {nameof(WireMessageSetup)}.");
        }

        return message.ToByteArray();
    }

    /// <inheritdoc />
    public override object FromBinary(byte[] bytes, string manifest)
    {
        if (!_parsers.TryGetValue(manifest, out var parser))
        {
            throw new SerializationException($"Refused a cluster message of unregistered kind '{manifest}'.");
        }

        return parser.ParseFrom(bytes);
    }

    private static IMessage AsMessage(object o) =>
        o as IMessage ?? throw new ArgumentException($"{nameof(WireSerializer)} serializes protobuf messages only, not {o?.GetType().Name ?? "null"}.", nameof(o));

    private static IEnumerable<MessageDescriptor> AllMessages(IEnumerable<MessageDescriptor> messages) =>
        messages.SelectMany(m => AllMessages(m.NestedTypes).Prepend(m));
}
