using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Crasher;

/// <summary>Answers, refuses, or takes its process down.</summary>
[ComponentContract("tests.crasher.Crasher")]
public interface ICrasher
{
    /// <summary>Counts the call (in the instance's checkpoint stream) and says where it ran.</summary>
    Task<EchoReply> EchoAsync(EchoRequest request, CancellationToken cancellationToken);

    /// <summary>Refuses with FAILED_PRECONDITION and the request's text.</summary>
    Task<EchoReply> RefuseAsync(EchoRequest request, CancellationToken cancellationToken);

    /// <summary>Ends its process at once, as a crashing native library or a corrupt state would.</summary>
    Task<EchoReply> CrashAsync(EchoRequest request, CancellationToken cancellationToken);
}

/// <summary>A text to send back.</summary>
[ProtoContract]
public sealed class EchoRequest
{
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;
}

/// <summary>The text, and where and how often the instance ran.</summary>
[ProtoContract]
public sealed class EchoReply
{
    [ProtoMember(1)]
    public string Text { get; set; } = string.Empty;

    /// <summary>The process the instance runs in.</summary>
    [ProtoMember(2)]
    public int ProcessId { get; set; }

    /// <summary>Echo calls to this key so far, across processes (from its checkpoint stream).</summary>
    [ProtoMember(3)]
    public long Calls { get; set; }

    /// <summary>Echo calls to this key in this activation.</summary>
    [ProtoMember(4)]
    public long CallsHere { get; set; }

    /// <summary>The manager the instance's context names.</summary>
    [ProtoMember(5)]
    public string Manager { get; set; } = string.Empty;
}
