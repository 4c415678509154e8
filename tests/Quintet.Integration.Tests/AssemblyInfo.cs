// Two test classes run at a time: most tests wait on their clusters far more than they compute, and two clusters of
// real processes fit on two cores (three at a time made the project slower, 24 min 49 s against 22 min 49 s, each
// test slowed by the others). Tests whose verdicts depend on how fast a failure is noticed run alone, in
// FailureTimingGroup, after the others.
[assembly: CollectionBehavior(CollectionBehavior.CollectionPerClass, MaxParallelThreads = 2)]
