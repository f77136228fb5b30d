"""Testing tools that ship with the compiler: the random graph generator and the
differential tester that runs its graphs on boards against the reference
(docs/random_graphs.md)."""
