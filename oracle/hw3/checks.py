"""The HW3 rubric's checks, one per item, each enforcing one rule of the spec.

Directed checks are fixed programs (scenarios) replayed through the submission's adapter and the model
(replay.py); after every call every difference is listed (compare.py), each a structured value whose rule is
a property of it (rules.py). An item fails on the first difference of its own rule, a failure reading
`scenario: step N call: what differs: expected X, got Y [rule: R]`; it reads past another rule's bug (the
model takes over the implementation's state) and says in one line what it could not check (verdicts.py).
Block ids are compared up to a renaming except by first_fit. The fuzz check runs the HW3 state machine,
strict on everything; memory safety runs valgrind and our own heap accounting; robustness makes each
allocation fail in turn. Every failed item with a program behind it gets a standalone repro C file next to
the report.
"""

import dataclasses
from typing import Any, Mapping

from hypothesis.reporting import with_reporter

from oracle.grading.grader import Check, Incomplete, NotApplicable, NotRun, Outcome, joined
from oracle.grading.rubric import at_least, positive
from oracle.hw3 import FAMILY
from oracle.difference import Difference
from oracle.hw3.difference import CRASH, POOL
from oracle.hw3.evidence import item_not_graded
from oracle.hw3.machine import Divergence
from oracle.hw3.replay import (  # noqa: F401  (replay: importable from here as before)
    Finding, Scenario, Step, append, create, destroy, fork, free, init, null, replay, stray_write,
)
from oracle.hw3.rules import (  # noqa: F401  (the rule names, importable from here as before)
    BIG_POOL, CHECK_BEFORE_ALLOCATE, FIRST_FIT, FREE_BLOCK_CONSISTENCY, MEMORY_SAFETY, NO_PREMATURE_WRITES,
    L1_TRAVERSAL, POINTER_SAFETY, STRAY_WRITE, TAIL_INSERTION, TASKS, fails, rule_of,
)
from oracle.hw3.spec import KV_PER_BLOCK, L2_PT_SIZE, MAX_LOGICAL_BLOCKS
from oracle.hw3.verdicts import Submission, built as _built, failed, run_scenarios as _run_scenarios
from oracle.hw3.verdicts import with_probes as _with_probes
from oracle.runner import fuzz

EXACT: frozenset[str] = frozenset()  # first_fit compares block ids exactly


# ---- the directed checks --------------------------------------------------------------------------------


def check_compiles(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    if sub.kind != "c":
        raise NotApplicable("a Python implementation is not compiled")
    if sub.refused:
        return Outcome(False, sub.refused)
    assert sub.build is not None
    if sub.build.ok:
        return Outcome(True)
    message = sub.build.verdict
    if sub.build.lenient_driver is not None:
        message += "; it compiles without -Werror, so the other items are graded on that build"
    return Outcome(False, message, sub.build.shown_log)


def check_llm_init(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    refused = Scenario("llm_init_refuses", (init(10, null_pool=True), init(0, 63), init(0)))
    accepted = Scenario("llm_init", (init(1), init(10, 63), init(300, 1)))  # partial blocks are never used
    return _with_probes(_run_scenarios(sub, "llm_init", [refused, accepted]), sub, "init_untouched")


def check_create_free(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _with_probes(_run_scenarios(sub, "create_free", [Scenario("create_sequence", (
        init(40), create(1, 17), create(2, 16), create(3, 1),
        create(1, 5), create(4, 0), create(4, -3), create(4, 4097), create(4, 37 * KV_PER_BLOCK + 1),
        free(2), free(2), free(99),
        create(-7, 2), create(0, 1), free(-7), free(0),  # any int is an id: zero and negative ones too
        fork(1, 9), free(9),  # its blocks are shared: each reference dropped, none freed
        create(5, L2_PT_SIZE * KV_PER_BLOCK + 1),  # two L2 tables
        append(5, 7), free(1), free(3), free(5),
        create(6, 36 * KV_PER_BLOCK),  # the whole pool again
    )), Scenario("create_sequence_cap", (
        # more than 256 free blocks: only the 256-block cap can refuse 4097 records (Task 2: "If required
        # blocks exceed 256 ... return NULL"), and exactly 256 blocks is allowed
        init(300), create(1, 4097), create(1, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK), create(2, 44 * KV_PER_BLOCK),
        free(1), create(3, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK + 1),
    ))]), sub, "many_sequences", "l2_hole_free", "two_engines")


def check_fork(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _with_probes(_run_scenarios(sub, "fork", [Scenario("fork_sequence", (
        init(40), create(1, 20), append(1, 111), fork(1, 2), fork(2, 3),
        fork(7, 4), fork(1, 3), fork(1, 1),
        create(4, L2_PT_SIZE * KV_PER_BLOCK + 1), fork(4, 5),  # two L2 tables copied
        free(1), free(4), append(2, 5), free(2), free(3), free(5),
    ))]), sub, "l2_hole_fork", "many_forks")


def check_append_cow(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    cow = Scenario("append_kv", (
        init(24), create(1, 14), append(1, 1), append(1, 2),  # fills block 0
        append(1, 3),  # a new page
        fork(1, 2), append(2, 10),  # copy-on-write of a block with one record written and 15 magic
        append(1, 4),  # the parent owns its block alone again: in place
        fork(1, 3), free(1), append(3, 20),  # ref_count back to 1: in place
        create(4, L2_PT_SIZE * KV_PER_BLOCK - 1), append(4, 30), append(4, 31),  # a new L2 table
        fork(4, 5), append(5, 32), append(4, 33),
    ))
    shared_by_four = Scenario("append_kv_shared_by_four", (  # each copy drops one reference: 4, 3, 2, then alone
        init(8), create(1, 5), fork(1, 2), fork(1, 3), fork(2, 4),
        append(3, 1), append(4, 2), append(2, 3), append(1, 4),
        fork(1, 5), free(1), append(5, 5),  # shared, then alone again after a free: in place
    ))
    oom_cow = Scenario("append_kv_oom_cow", (  # a shared block to copy and no free block: refused, nothing changed
        init(3), create(1, 20), fork(1, 2), create(3, 1), append(2, 7), free(3), append(2, 8), append(1, 9),
    ))
    cap = Scenario("append_kv_cap", (
        init(257), create(1, 256 * KV_PER_BLOCK - 1), append(1, 5), append(1, 6),  # logical_idx 256: refused
    ))
    return _run_scenarios(sub, "append_cow", [cow, shared_by_four, oom_cow, cap])


def check_big_pool(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Beyond the spec's tests: blocks past 2^25 of a 2 GiB pool, where an `int` byte offset overflows. Its own
    item, so a course can weigh or drop it (C only: a Python int does not overflow)."""
    if sub.kind != "c":
        raise NotApplicable("an int byte offset overflows only in C")
    _built(sub)
    return _with_probes(None, sub, "big_pool")


def check_llm_destroy(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    outcome = _run_scenarios(sub, "llm_destroy", [
        Scenario("llm_destroy", (init(20), create(1, 20), fork(1, 2), append(2, 7), create(3, 40), destroy())),
        Scenario("llm_destroy_empty", (init(10), destroy())),
        Scenario("llm_destroy_after_free", (init(10), create(1, 5), free(1), destroy())),
    ])
    return _with_probes(outcome, sub, "destroy_keeps_pool")


def check_null_engine(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "null_engine", [Scenario("null_engine", (
        init(10), create(1, 20),
        null(create(2, 5)), null(fork(1, 2)), null(append(1, 5)), null(free(1)), null(destroy()),
    ))])


def check_check_before_allocate(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    refusals = Scenario("failing_calls", (
        init(16), create(1, 20),
        create(1, 5), create(2, 0), create(2, 4097), create(2, 15 * KV_PER_BLOCK),  # duplicate, bad, cap, OOM
        fork(9, 3), fork(1, 1), append(9, 1), free(9),
        null(create(2, 5)), null(fork(1, 2)), null(append(1, 5)), null(free(1)), null(destroy()),
        create(2, 14 * KV_PER_BLOCK),  # the pool is now full
        fork(1, 3), append(3, 5), append(1, 5),  # copy-on-write needed, no free block
        create(4, 1),
    ))
    needs_l2 = Scenario("oom_append_needs_l2", (
        init(16), create(1, L2_PT_SIZE * KV_PER_BLOCK), append(1, 7),  # needs block_table[1] and a block
    ))
    new_page = Scenario("oom_append_new_page", (init(2), create(1, 32), append(1, 7)))
    cap = Scenario("cap_with_free_blocks", (  # more than 256 free blocks: the cap alone refuses, before allocating
        init(300), create(1, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK + 1), create(1, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK),
        append(1, 5), create(2, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK + 1),
    ))
    return _run_scenarios(sub, "check_before_allocate", [refusals, needs_l2, new_page, cap, *FAILING_FIRST, growing])


def failing_calls(fresh_id: int, live_id: int, oom_records: int) -> tuple[Step, ...]:
    """Calls that must fail and allocate nothing: create (OOM, the 256-block cap, a bad length, a duplicate id),
    fork (an unknown parent, a duplicate id), append (an unknown id)."""
    return (
        create(fresh_id, oom_records), create(fresh_id, MAX_LOGICAL_BLOCKS * KV_PER_BLOCK + 1), create(fresh_id, 0),
        create(live_id, 1), fork(fresh_id + 1, fresh_id + 2), fork(live_id, live_id), append(fresh_id + 1, 5),
    )


# Each failing call as the first call of an engine (where a lazily built registry is first allocated), of a
# second engine after llm_destroy (where a per-process one is rebuilt); an unknown id before any sequence.
FAILING_FIRST = [
    Scenario(f"first_call_{i}", (init(4), step, create(1, 1), *failing_calls(100, 1, 5 * KV_PER_BLOCK)))
    for i, step in enumerate((create(1, 5 * KV_PER_BLOCK), create(1, 4097), create(1, 0), fork(1, 2), append(1, 5)))
] + [Scenario("after_destroy_and_init", (
    init(8), create(1, 16), create(2, 16), destroy(), init(8), *failing_calls(100, 100, 9 * KV_PER_BLOCK),
    create(1, 1), *failing_calls(100, 1, 9 * KV_PER_BLOCK),
))]


def _growing() -> Scenario:
    """Failing calls after each of 70 creates: any registry grown by doubling (1, 2, 4, ... 64) or by a fixed
    step is full after one of them, so a check made after growing it allocates there."""
    steps: list[Step] = [init(80)]
    for seq_id in range(1, 71):
        steps += [create(seq_id, 1), create(1000, 81 * KV_PER_BLOCK), fork(5000, 1001), fork(seq_id, seq_id)]
    return Scenario("failing_calls_as_sequences_grow", tuple(steps))


growing = _growing()


def check_first_fit(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "first_fit", [Scenario("first_fit", (
        init(12), create(1, 16), create(2, 32), create(3, 16), free(2),
        create(4, 16), create(5, 32),  # into the hole, then across it
        fork(4, 6), append(6, 9), append(4, 9),  # new pages
        free(1), fork(3, 7), append(7, 1),  # block 0 again
        create(8, 5), fork(8, 9), free(3), append(9, 1),  # copy-on-write into the lowest free block
    )), Scenario("first_fit_after_destroy_and_init", (
        # state first fit must not keep across engines: a scan hint, a free list
        init(12), create(1, 5 * KV_PER_BLOCK), create(2, 16), free(1), destroy(),
        init(12), create(3, 16), create(4, 48), destroy(),
        init(6), create(5, 6 * KV_PER_BLOCK), free(5), create(6, 1),
    )), Scenario("first_fit_many_holes", (
        # ten one-block sequences freed out of order, then ten creates: a free heap or list must still give
        # the lowest free block each time (a heap's sift with the wrong parent does not)
        init(12), *(create(seq, 1) for seq in range(1, 11)), *(free(seq) for seq in (7, 3, 9, 1, 5, 10, 2, 8, 4, 6)),
        *(create(seq, 1) for seq in range(11, 21)),
    )), Scenario("first_fit_holes_of_many_blocks", (  # holes of three blocks and one, refilled across them
        init(10), create(1, 48), free(1), create(2, 48), create(3, 16), free(2), create(4, 16), free(3),
        create(5, 48), create(6, 48), free(4), free(6), create(7, 64), free(5), create(8, 33), create(9, 1),
    )), *FREE_ORDERS], EXACT)


def _free_orders() -> list[Scenario]:
    """Four one-block sequences, three freed in each order, then three creates: each must take the lowest
    free block (whatever a free list or a hint remembers of the order of the frees)."""
    from itertools import permutations

    return [Scenario(f"first_fit_frees_{''.join(map(str, order))}", (
        init(6), create(1, 1), create(2, 1), create(3, 1), create(4, 1), *map(free, order),
        create(5, 1), create(6, 17), append(4, 1),
    )) for order in permutations((1, 2, 3))]


FREE_ORDERS = _free_orders()


def check_no_premature_writes(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Only append_kv writes the pool, and only its record (or a copy): on a pool of whole blocks, and on one
    with a trailing partial block, which nothing may write either."""
    return _run_scenarios(sub, "no_premature_writes", [Scenario(name, (
        init(8, extra), create(1, 40), append(1, 5), fork(1, 2), free(1), free(2),
        create(3, 48),  # stale records (and magic numbers) are its first 48 records
        create(4, 16), fork(4, 5), free(4),  # free writes nothing either
        create(6, 16), append(6, 7), append(6, 8),  # a fresh page: the append writes its record, and only that
        destroy(),  # nor does destroy
    )) for name, extra in (("no_premature_writes", 0), ("no_premature_writes_partial_block", 13))])


def check_free_count(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "free_count", [Scenario("free_count", (
        init(10), create(1, 32), fork(1, 2), free(1),  # still shared by 2: not free
        append(2, 1), fork(2, 3), append(3, 2),  # a new page, then copy-on-write
        free(2), free(3), create(4, 10 * KV_PER_BLOCK), free(4),
    ))])


def check_tail_insertion(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "tail_insertion", [Scenario("tail_insertion", (
        init(16), create(3, 1), create(1, 1), create(2, 1), fork(1, 7), free(1), create(1, 1), fork(3, 0),
        append(3, 5), append(7, 6), append(0, 7),  # appends (one a copy-on-write) leave the order as it is
        free(3), free(0), create(4, 1), free(2), append(1, 8),  # so do frees of the head, the tail, the middle
    ))])


def check_l1_traversal(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """free_sequence and fork_sequence must visit all 16 L1 slots: sequences that use all 16 (and slot 15 with
    one block) freed and forked, then the probes, which edit a live block table to leave NULL slots between
    live ones (through the API the L2 tables are always contiguous)."""
    full, one_past = MAX_LOGICAL_BLOCKS * KV_PER_BLOCK, (MAX_LOGICAL_BLOCKS - L2_PT_SIZE) * KV_PER_BLOCK + 1
    try:
        outcome = _run_scenarios(sub, "l1_traversal", [Scenario("all_16_l1_slots", (
            init(300), create(1, full), fork(1, 2), free(1), free(2),
            create(3, one_past), fork(3, 4), free(4), free(3),
        ))])
    except NotRun as stop:  # another rule's bug stopped them first: the probes may still check the walk
        try:
            probed = _with_probes(None, sub, "l1_gap_free", "l1_gap_fork")  # not run either when they check nothing
        except NotApplicable:  # the probes are not graded for this submission (a Python one): the stop stands
            raise stop from None
        if not probed.passed or stop.excuse is None:
            return probed
        return Outcome(True, f"{stop}; {probed.message}" if probed.message else str(stop), excuse=joined(stop.excuse, probed.excuse))
    return _with_probes(outcome, sub, "l1_gap_free", "l1_gap_fork")


# ---- the stateful fuzz ----------------------------------------------------------------------------------

FUZZ_OPTIONS = {"seed": 110, "examples": 120, "steps": 50, "shrink_replays": 2000, "seconds": 300.0}
FUZZ_LIMITS = {"examples": at_least(1), "steps": at_least(1), "shrink_replays": at_least(0), "seconds": positive}


def check_fuzz(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """The HW3 state machine against the oracle: a fixed seed and budgets that are counts (`examples`
    programs, `shrink_replays` replays to shrink a failure), so a submission gets the same verdict and
    program on any machine. `seconds` is only a safety net: a run that reaches it before deciding is
    `incomplete`, never a pass."""
    factory = _built(sub)
    seed = sub.seed if sub.seed is not None else options["seed"]
    with with_reporter(lambda _: None):  # Hypothesis's own warnings are ours to word
        report = fuzz(FAMILY, sub.path, factory, examples=options["examples"], steps=options["steps"], seed=seed,
                      shrink_replays=options["shrink_replays"], seconds=options["seconds"])
    stats = report.stats
    ran = f"{stats.examples} of {options['examples']} programs, {stats.steps} calls, seed {seed}"
    if report.cut_short == "generate-seconds":
        raise Incomplete(f"stopped at the {options['seconds']:g} s time limit after {ran}, no divergence so far "
                         "(a safety net for a very slow submission or machine)")
    if report.passed:
        return Outcome(True)
    program = "\n".join(report.program)
    failure = report.failure
    if not isinstance(failure, Divergence):
        return Outcome(False, f"fuzz ({ran}): {report.divergence}", "", program)
    sub.fuzz_failure = failure
    outcome = failed(sub, "fuzz", finding_from(failure), program)
    note = {
        "shrink-replays": f" (shrinking stopped after its {options['shrink_replays']} replays: the program may not be minimal)",
        "shrink-seconds": f" (shrinking stopped at the {options['seconds']:g} s time limit: the program may not be minimal)",
    }.get(report.cut_short or "", "")
    return dataclasses.replace(outcome, message=f"{outcome.message} ({ran}){note}")


def finding_from(failure: Divergence) -> Finding:
    """A machine Divergence as a Finding: the step and call located, with the machine's structured difference."""
    calls = list(failure.calls)
    difference = failure.difference or Difference(CRASH, "", None, str(failure).splitlines()[0])
    call = calls[-1]
    stray = difference.aspect == POOL and stray_write(call, failure.before, failure.seen)  # the only effect it knows
    return Finding("fuzz", len(calls), call, difference, rule_of(difference, call, STRAY_WRITE if stray else None),
                   failure.step, calls=calls, model=failure.model, seen=failure.seen)


from oracle.hw3.alloc_failure import ROBUSTNESS, check_alloc_failure  # noqa: E402
from oracle.hw3.memory_safety import MEMCHECK_LIMITS, MEMCHECK_OPTIONS, check_memory_safety  # noqa: E402

# ---- the registry ---------------------------------------------------------------------------------------


def _on_its_evidence(item: str, run: Any) -> Any:
    """The check of `item`, left out of the score (not applicable, in the student's words) for a submission
    whose kind gives none of the evidence its programs rest on (evidence.item_not_graded)."""

    def check(sub: Submission, options: Mapping[str, Any]) -> Outcome:
        why = item_not_graded(sub.kind, item)
        if why is not None:
            raise NotApplicable(why, student=why)
        return run(sub, options)

    return check


CHECKS: dict[str, Check] = {
    check.id: dataclasses.replace(check, run=_on_its_evidence(check.id, check.run))
    for check in (
        Check("compiles", "Compilation Standard: gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2", check_compiles),
        Check("llm_init", TASKS["llm_init"], check_llm_init),
        Check("create_free", TASKS["create_sequence"], check_create_free),
        Check("fork", TASKS["fork_sequence"], check_fork),
        Check("append_cow", TASKS["append_kv"], check_append_cow),
        Check("llm_destroy", TASKS["llm_destroy"], check_llm_destroy),
        Check("big_pool", BIG_POOL, check_big_pool),
        Check("null_engine", POINTER_SAFETY, check_null_engine),
        Check("check_before_allocate", CHECK_BEFORE_ALLOCATE, check_check_before_allocate),
        Check("first_fit", FIRST_FIT, check_first_fit),
        Check("no_premature_writes", NO_PREMATURE_WRITES, check_no_premature_writes),
        Check("free_count", FREE_BLOCK_CONSISTENCY, check_free_count),
        Check("l1_traversal", L1_TRAVERSAL, check_l1_traversal),
        Check("tail_insertion", TAIL_INSERTION, check_tail_insertion),
        Check("fuzz", "All rules: stateful fuzzing against the oracle", check_fuzz, FUZZ_OPTIONS, FUZZ_LIMITS,
              catch_all=True),
        Check("memory_safety", MEMORY_SAFETY, check_memory_safety, MEMCHECK_OPTIONS, MEMCHECK_LIMITS),
        Check("alloc_failure", ROBUSTNESS, check_alloc_failure),
    )
}
