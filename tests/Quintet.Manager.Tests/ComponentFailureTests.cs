using Grpc.Core;
using Quintet.Manager.Calls;

namespace Quintet.Manager.Tests;

/// <summary>A component's exception as its caller's status: code that does not load is the package's fault, said so.</summary>
public sealed class ComponentFailureTests
{
    public static TheoryData<Exception> BrokenCode() =>
    [
        new BadImageFormatException("Bad IL format."),
        new TypeLoadException("Could not load type 'X'."),
        new MissingMethodException("Method not found: 'Void X.Y()'."),
        new MissingFieldException("Field not found."),
        new InvalidProgramException("Common Language Runtime detected an invalid program."),
        new FileNotFoundException("Could not load file or assembly 'Dependency, Version=1.0.0.0'."),
    ];

    [Theory]
    [MemberData(nameof(BrokenCode))]
    public void Code_that_does_not_load_answers_failed_precondition_saying_the_package_is_broken(Exception e)
    {
        var failure = ComponentFailure.Of("Acme.Cart", "Add", "k", e);
        Assert.Equal(StatusCode.FailedPrecondition, failure.Code);
        Assert.StartsWith("Acme.Cart.Add (key 'k') cannot run: its package is broken (", failure.Message, StringComparison.Ordinal);
        Assert.Contains("deploy it again", failure.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_component_that_throws_answers_unknown_with_its_exception()
    {
        var failure = ComponentFailure.Of("Acme.Cart", "Add", "k", new FileNotFoundException("cart.json not found"));
        Assert.Equal(StatusCode.Unknown, failure.Code);
        Assert.Equal("Acme.Cart.Add (key 'k') failed: FileNotFoundException: cart.json not found", failure.Message);
    }

    [Fact]
    public void An_unreadable_request_is_described_in_a_callers_words()
    {
        var message = RequestProblem.Describe("samples.counter.Counter", "Add", typeof(Samples.Counter.AddRequest), 3, new OverflowException("Arithmetic operation resulted in an overflow."));
        Assert.StartsWith("The request body (3 bytes) is not a valid AddRequest protobuf message for samples.counter.Counter/Add: a length or number in it is larger than any message can hold.", message, StringComparison.Ordinal);
        Assert.DoesNotContain("Arithmetic", message, StringComparison.Ordinal);
    }
}
