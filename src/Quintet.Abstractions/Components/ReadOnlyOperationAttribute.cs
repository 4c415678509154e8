namespace Quintet.Components;

/// <summary>
/// Marks a contract's operation that changes nothing (a read): its calls keep no completion record, so a retried call
/// runs again instead of being answered from the record of its first run, and the owner spends no memory or write on
/// it. Every other operation of a call that carries a client identity (the .NET client sends one) is recorded: a retry
/// of a call that ran gets the answer it gave, and runs nothing. Mark only operations that leave the instance's state
/// as it was: a retried call to one runs again and may see a later state.
/// </summary>
[AttributeUsage(AttributeTargets.Method, Inherited = false)]
public sealed class ReadOnlyOperationAttribute : Attribute
{
}
