// Three test classes run at a time: most tests wait on their clusters far more than they compute (two at a time left a
// core idle for much of the run, and the suite past its 25-minute budget). Tests whose verdicts depend on how fast a failure is noticed run alone, in
// FailureTimingGroup, after the others.
[assembly: CollectionBehavior(CollectionBehavior.CollectionPerClass, MaxParallelThreads = 3)]
