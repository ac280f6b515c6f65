"""oracle/hw3/trace.py: the native run and the run under valgrind of one battery program, compared step by step on
what the grader observed (the return value, the engine's state, the pool's bytes)."""

from oracle.hw3.trace import TraceStep, first_difference

A = TraceStep("step 1 llm_init(pool, 128)", "an engine", "s1", "p1")


def test_two_runs_that_agree_have_no_difference_even_when_one_stops_early():
    assert first_difference([A, A], [A]) is None


def test_each_kind_of_difference_names_the_step_and_what_differs():
    cases = [(A.__class__(A.call, "NULL", "s1", "p1"), "returned an engine natively, NULL under valgrind"),
             (A.__class__(A.call, A.returned, "unreadable: crashed", "p1"),
              "the engine's state: s1 natively, unreadable: crashed under valgrind"),
             (A.__class__(A.call, A.returned, "s2", "p1"), "the engine's state after it differs"),
             (A.__class__(A.call, A.returned, "s1", "p2"), "the pool's bytes after it differ")]
    for under_valgrind, says in cases:
        found = first_difference([A], [under_valgrind])
        assert found is not None and found.startswith("step 1 llm_init(pool, 128): ") and says in found, found
