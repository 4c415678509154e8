namespace Quintet.Integration.Tests;

/// <summary>
/// The tests whose verdicts depend on how fast a failure is noticed (a removal within a bound, UNAVAILABLE within a
/// second, an owner that stops serving within 3 s of a cut) or that pause managers past the failure detector's budget.
/// They run one at a time with nothing beside them, so that a neighbour's load never stretches a detection they measure.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class FailureTimingGroup
{
    /// <summary>The collection's name, for <see cref="CollectionAttribute"/>.</summary>
    public const string Name = "Failure timing";
}
