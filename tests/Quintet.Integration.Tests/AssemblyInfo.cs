// Clusters of real processes share two cores: one test at a time keeps failure detection honest.
[assembly: CollectionBehavior(DisableTestParallelization = true)]
