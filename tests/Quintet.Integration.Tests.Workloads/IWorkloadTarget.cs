using ProtoBuf;
using Quintet.Components;

namespace Quintet.Integration.Tests.Workloads;

/// <summary>Integer registers and a set of integers, kept in shared dictionaries, for the fault workloads.</summary>
[ComponentContract("tests.workloads.WorkloadTarget")]
public interface IWorkloadTarget
{
    /// <summary>Reads a register linearizably.</summary>
    Task<RegisterReply> ReadAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Writes a register.</summary>
    Task<RegisterReply> WriteAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Sets a register to the value if it holds the expected one; <see cref="RegisterReply.Applied"/> says whether it did.</summary>
    Task<RegisterReply> CompareAndSetAsync(RegisterRequest request, CancellationToken cancellationToken);

    /// <summary>Adds an element to the set.</summary>
    Task<SetReply> AddAsync(SetRequest request, CancellationToken cancellationToken);

    /// <summary>Reads the set: every element from 1 to <see cref="SetRequest.Element"/> that is present, after every
    /// update ordered before the call, and how many entries the set holds in all.</summary>
    Task<SetReply> ReadSetAsync(SetRequest request, CancellationToken cancellationToken);
}

/// <summary>A register operation.</summary>
[ProtoContract]
public sealed class RegisterRequest
{
    /// <summary>The register.</summary>
    [ProtoMember(1)]
    public string Key { get; set; } = string.Empty;

    /// <summary>The value to write (the new value of a compare-and-set).</summary>
    [ProtoMember(2)]
    public long Value { get; set; }

    /// <summary>The value a compare-and-set expects, unless <see cref="ExpectAbsent"/>.</summary>
    [ProtoMember(3)]
    public long Expected { get; set; }

    /// <summary>A compare-and-set that expects the register never written.</summary>
    [ProtoMember(4)]
    public bool ExpectAbsent { get; set; }
}

/// <summary>A register's value, or whether a compare-and-set applied.</summary>
[ProtoContract]
public sealed class RegisterReply
{
    /// <summary>The value read.</summary>
    [ProtoMember(1)]
    public long Value { get; set; }

    /// <summary>False for a read of a register never written.</summary>
    [ProtoMember(2)]
    public bool Found { get; set; }

    /// <summary>Whether a compare-and-set applied.</summary>
    [ProtoMember(3)]
    public bool Applied { get; set; }
}

/// <summary>A set operation.</summary>
[ProtoContract]
public sealed class SetRequest
{
    /// <summary>The element to add; for a read, the largest element to look for.</summary>
    [ProtoMember(1)]
    public long Element { get; set; }
}

/// <summary>The elements read.</summary>
[ProtoContract]
public sealed class SetReply
{
    /// <summary>The elements present, up to the largest asked for.</summary>
    [ProtoMember(1)]
    public List<long> Elements { get; set; } = [];

    /// <summary>How many entries the set holds in all, those beyond the largest asked for included.</summary>
    [ProtoMember(2)]
    public int Count { get; set; }
}
