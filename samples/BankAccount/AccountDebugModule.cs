using System.Globalization;
using Quintet.Components;

namespace Samples.BankAccount;

/// <summary>
/// The account's debug module: with <c>debug: true</c> in its QoS spec, each invocation its manager records shows the
/// balance in currency units, the updates applied and whether the account is frozen, right after the call, and writes
/// amounts the way a teller reads them.
/// </summary>
public sealed class AccountDebugModule : DebugModule<AccountComponent>
{
    /// <inheritdoc />
    protected override IEnumerable<KeyValuePair<string, string>> DescribeState(AccountComponent instance)
    {
        yield return new("balance", Units(instance.Debug.Balance));
        yield return new("updates", instance.Debug.Updates.ToString(CultureInfo.InvariantCulture));
        yield return new("frozen", instance.Debug.FrozenReason.Length > 0 ? $"yes ({instance.Debug.FrozenReason})" : "no");
    }

    /// <inheritdoc />
    public override string? DescribeMessage(string operation, object message) => message switch
    {
        Amount amount => $"{operation} {Units(amount.Value)}",
        Balance balance => $"balance {Units(balance.Value)} after update {balance.Updates}",
        _ => null,
    };

    private static string Units(long cents) => (cents / 100m).ToString("N2", CultureInfo.InvariantCulture);
}
