using System.Text;
using ProtoBuf;
using ProtoBuf.Meta;

namespace Quintet.Components;

/// <summary>
/// The encoding the typed tools use for a component's own values (shared structures, group messages, backups,
/// checkpoints): a class marked <c>[ProtoContract]</c> as its protobuf encoding, a <see cref="string"/> as its UTF-8
/// bytes (so a typed string entry and a byte one written with <c>Encoding.UTF8</c> are the same). The bytes stay
/// available to the byte APIs: a value written typed reads as bytes, and bytes in this encoding read typed.
/// </summary>
public static class ProtoValue
{
    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    /// <summary>The bytes of <paramref name="value"/>.</summary>
    /// <exception cref="InvalidOperationException"><typeparamref name="T"/> is neither a string nor marked <c>[ProtoContract]</c>.</exception>
    public static byte[] Encode<T>(T value)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(value);
        if (value is string text)
        {
            return StrictUtf8.GetBytes(text);
        }

        using var buffer = new MemoryStream();
        Models<T>.Get().Serialize(buffer, value);
        return buffer.ToArray();
    }

    /// <summary>Reads <paramref name="bytes"/> as a <typeparamref name="T"/>.</summary>
    /// <param name="bytes">The encoded value.</param>
    /// <param name="what">What the bytes are, for the error (for example <c>the entry 'k' of the shared dictionary 'd'</c>).</param>
    /// <exception cref="ProtoValueException">The bytes are not an encoding of <typeparamref name="T"/>.</exception>
    /// <exception cref="InvalidOperationException"><typeparamref name="T"/> is neither a string nor marked <c>[ProtoContract]</c>.</exception>
    public static T Decode<T>(ReadOnlyMemory<byte> bytes, string what = "a value")
        where T : class
    {
        var model = typeof(T) == typeof(string) ? null : Models<T>.Get();
        try
        {
            return model is null
                ? (T)(object)StrictUtf8.GetString(bytes.Span)
                : (T)model.Deserialize(typeof(T), bytes, null, null);
        }
        catch (Exception e) when (e is ProtoException or ArgumentException or InvalidOperationException or EndOfStreamException or OverflowException or InvalidCastException)
        {
            throw new ProtoValueException($"{Capitalized(what)} ({bytes.Length} bytes) does not decode as {typeof(T).FullName}: {e.Message} It was written as another type, or as bytes in another format; read it through the byte API instead.", typeof(T), e);
        }
    }

    private static string Capitalized(string what) => what.Length == 0 ? what : char.ToUpperInvariant(what[0]) + what[1..];

    /// <summary>One model per type, made with it: a package's types stay out of protobuf-net's default model, which would keep the package's assemblies from unloading.</summary>
    private static class Models<T>
    {
        private static readonly RuntimeTypeModel? Model = Create();

        public static RuntimeTypeModel Get() => Model ?? throw new InvalidOperationException(
            $"{typeof(T).FullName} cannot be a typed value: mark it [ProtoContract] with numbered [ProtoMember] fields (or use string, or the byte API).");

        private static RuntimeTypeModel? Create()
        {
            if (!typeof(T).IsDefined(typeof(ProtoContractAttribute), inherit: false))
            {
                return null;
            }

            var model = RuntimeTypeModel.Create("quintet-value-" + typeof(T).FullName);
            model.Add(typeof(T), applyDefaultBehaviour: true);
            return model;
        }
    }
}

/// <summary>Stored bytes that do not decode as the type a typed tool was asked to read them as.</summary>
public sealed class ProtoValueException : FormatException
{
    /// <summary>Creates the exception.</summary>
    public ProtoValueException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public ProtoValueException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and a cause.</summary>
    public ProtoValueException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates the exception with a message, the type asked for and the decoder's error.</summary>
    public ProtoValueException(string message, Type valueType, Exception innerException)
        : base(message, innerException) => ValueType = valueType;

    /// <summary>The type the bytes were read as.</summary>
    public Type? ValueType { get; }
}
