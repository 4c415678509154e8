// Two test classes run at a time: most tests wait on their clusters far more than they compute, and two clusters of
// real processes fit on two cores. Tests whose verdicts depend on how fast a failure is noticed run alone, in
// FailureTimingGroup, after the others.
[assembly: CollectionBehavior(CollectionBehavior.CollectionPerClass, MaxParallelThreads = 2)]
