"""The machinery that runs a submission written in C, for any family graded in C: the build in the sandbox and
what it refuses (refusal), the allocation ledger and its fence (ledger, heap_notify, heap_maps), and valgrind's
log on its way to the grader (log_channel). It names no family: a family passes in its facts (its driver's
source and header, its reply's layout) as data."""
