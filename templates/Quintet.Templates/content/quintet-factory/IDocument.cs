using ProtoBuf;
using Quintet.Components;

namespace Factory1;

/// <summary>A document a client creates (CreateInstanceAsync), writes to, reads and destroys.</summary>
[ComponentContract("Factory1.Document")]
public interface IDocument
{
    /// <summary>Appends <see cref="AppendRequest.Text"/> and returns the whole text.</summary>
    Task<DocumentText> AppendAsync(AppendRequest request, CancellationToken cancellationToken);

    /// <summary>Returns the whole text.</summary>
    Task<DocumentText> ReadAsync(ReadRequest request, CancellationToken cancellationToken);
}

/// <summary>Text to append.</summary>
[ProtoContract]
public sealed class AppendRequest
{
    /// <summary>The text.</summary>
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;
}

/// <summary>Asks for the text.</summary>
[ProtoContract]
public sealed class ReadRequest
{
}

/// <summary>A document's text, its key and the manager hosting it.</summary>
[ProtoContract]
public sealed class DocumentText
{
    /// <summary>The text written so far.</summary>
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;

    /// <summary>The instance's key, as its class factory named it.</summary>
    [ProtoMember(2)]
    public string Key { get; set; } = string.Empty;

    /// <summary>The node name of the manager hosting the instance.</summary>
    [ProtoMember(3)]
    public string Manager { get; set; } = string.Empty;
}
