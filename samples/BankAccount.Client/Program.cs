using Grpc.Core;
using Quintet.Client;
using Samples.BankAccount;

// Usage: BankAccount.Client <manager endpoint> [account key]
// Deposits and withdraws on one account and prints each balance; a refused withdrawal shows its status.
if (args.Length == 0)
{
    Console.Error.WriteLine("usage: BankAccount.Client <manager endpoint, e.g. http://127.0.0.1:5053> [account key]");
    return 2;
}

using var client = QuintetClient.Connect(args[0]);
var account = client.GetComponent<IAccount>(args.Length > 1 ? args[1] : "acct-42");
try
{
    var balance = await account.DepositAsync(new Amount { Value = 10_000 }, CancellationToken.None);
    Console.WriteLine($"deposited 100.00: balance {balance.Value / 100.0:F2} on {balance.Manager} ({balance.Activation})");
    balance = await account.WithdrawAsync(new Amount { Value = 2_550 }, CancellationToken.None);
    Console.WriteLine($"withdrew 25.50:   balance {balance.Value / 100.0:F2}");
    await account.WithdrawAsync(new Amount { Value = balance.Value + 1 }, CancellationToken.None);
}
catch (RpcException e) when (e.StatusCode == StatusCode.FailedPrecondition)
{
    Console.WriteLine($"refused as expected: {e.Status.Detail}");
}
catch (RpcException e)
{
    Console.Error.WriteLine($"call failed: {e.StatusCode}: {e.Status.Detail}");
    return 1;
}

return 0;
