using System.Globalization;
using Component1;
using Grpc.Core;
using Quintet.Client;

// Usage: Client1 <manager endpoint>[,<another endpoint>...] [key] [amount]
// Adds the amount to the counter with that key and prints its value and the manager hosting it. Given several
// managers, the client fails over to the next when one does not answer.
if (args.Length == 0)
{
    Console.Error.WriteLine("usage: Client1 <manager endpoint, e.g. http://127.0.0.1:5053>[,<another>...] [key] [amount]");
    return 2;
}

var endpoints = args[0].Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
var key = args.Length > 1 ? args[1] : "counter-1";
var amount = args.Length > 2 ? long.Parse(args[2], CultureInfo.InvariantCulture) : 1;

using var client = QuintetClient.Connect(endpoints);
var counter = client.GetComponent<ICounter>(key);
try
{
    using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
    var value = await counter.AddAsync(new AddRequest { Amount = amount }, deadline.Token);
    Console.WriteLine($"{key} = {value.Value} on {value.Manager}");
    return 0;
}
catch (RpcException e)
{
    Console.Error.WriteLine($"call failed: {e.StatusCode}: {e.Status.Detail}");
    return 1;
}
