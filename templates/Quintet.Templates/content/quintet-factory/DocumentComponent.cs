using System.Text;
using Quintet.Components;

namespace Factory1;

/// <summary>One document per instance a client created; calls to it take turns, so the builder needs no lock.</summary>
public sealed class DocumentComponent : Component, IDocument
{
    private readonly StringBuilder _text = new();

    /// <inheritdoc />
    public Task<DocumentText> AppendAsync(AppendRequest request, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(request);
        _text.Append(request.Text);
        return Task.FromResult(Current());
    }

    /// <inheritdoc />
    public Task<DocumentText> ReadAsync(ReadRequest request, CancellationToken cancellationToken) => Task.FromResult(Current());

    private DocumentText Current() => new() { Text = _text.ToString(), Key = Context.Key, Manager = Context.Manager };
}
