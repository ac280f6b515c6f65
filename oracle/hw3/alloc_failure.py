"""Robustness under allocation failure (reported, 0 points in the default rubric): allocations of a fixed
program's calls fail in turn; the call must then fail cleanly (or succeed regardless), and llm_destroy must
still free everything. C only: the driver counts allocations and fails the k-th.

The work is bounded by construction: a call making at most FAILED_PER_CALL allocations has every one of them
failed in turn; a longer call has FAILED_PER_CALL of them (allocations_to_fail), chosen from what the grader
itself saw of the call with none failing, so the same submission is tried the same way on every machine. Where
the grader's ledger saw the call (natively, ledger.py), the choice starts from the blocks the call kept (still
live when it ended) that hold the engine's own objects (the engine, ref_count, a Sequence, an L1 or L2 table, read
by the grader where the engine's pointers say), then the other blocks it kept, then the rest: those whose failure
leaves something built to undo come first, however many other blocks, allocated and freed within the call or
kept beside the engine, surround them. Where it did not (under valgrind, or with no listener), from the call's
count alone.
That count is at least the blocks the grader saw become live (adapter.py): a submission claiming fewer
allocations cannot shrink it. Each try replays the program from a fresh driver: no state a failure left behind can reach the next try."""

import copy
from contextlib import closing
from typing import Any, Callable, Mapping

from oracle.grading.grader import NotApplicable, NotRun, Outcome
from oracle.hw3.c.stray import named
from oracle.hw3.feedback import student_text
from oracle.hw3.compare import first_difference
from oracle.difference import Difference
from oracle.hw3.difference import CRASH, FREE_COUNT, LEAK
from oracle.hw3.machine import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3 import programs
from oracle.hw3.replay import Finding, listing, replay
from oracle.hw3.step import call_on as _call, predict
from oracle.hw3.rules import rule_of
from oracle.program import Program, Step
from oracle.hw3.verdicts import LENIENT, Submission, excuse_for, passed_over_note

ANY_ORDER = LENIENT | {"list_order"}  # block ids up to a renaming, the list as a set of ids: others own them

ROBUSTNESS = "Robustness: a failed malloc leaves no trace (no crash, no leak, no half-built sequence)"
FAILED_PER_CALL = 32  # the most allocations of one call failed, one per replay
EDGE = 8  # of a longer call: its first and last EDGE always, where building up and undoing most often go wrong
ALLOCATING = programs.load(programs.ALLOCATING)  # programs/allocation_failure.txt


def allocations_to_fail(count: int, kept: tuple[int, ...] | None = None,
                        objects: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Which allocations (counting from 1) of a call making `count` of them fail, one per replay: all of them
    up to FAILED_PER_CALL. Beyond, with `kept` (the allocations still live when the call ended with none
    failing, from the grader's ledger) unknown, a sample of all (`_sample`); known, in turn (`_in_turn`) the kept
    ones that hold the engine's own objects (`objects`: the engine, ref_count, a Sequence, an L1 or L2 table), the
    other kept ones, and the others. The work is the tries', whatever the count (a count is the submission's claim
    where larger than the grader's)."""
    if count <= FAILED_PER_CALL:
        return tuple(range(1, count + 1))
    if kept is None:
        return _sample(count, lambda i: i + 1, FAILED_PER_CALL)
    own = sorted({k for k in kept if 1 <= k <= count})
    held = sorted(set(objects) & set(own))
    rest = sorted(set(own) - set(held))
    return _in_turn([(len(held), held.__getitem__), (len(rest), rest.__getitem__),
                     (count - len(own), lambda i: _other(own, i))], FAILED_PER_CALL)


def _in_turn(groups: list[tuple[int, Callable[[int], int]]], tries: int) -> tuple[int, ...]:
    """`tries` of the allocations of `groups` (each its length and its i-th), a sample of each in turn from what
    is left, leaving EDGE tries (or as many as they hold) to the groups after it."""
    chosen: list[int] = []
    for at, (length, ith) in enumerate(groups):
        later = sum(n for n, _ in groups[at + 1 :])
        chosen += _sample(length, ith, tries - len(chosen) - min(later, EDGE))
    return tuple(sorted(chosen))


def _other(kept: list[int], i: int) -> int:
    """The i-th (from 0) allocation that is not in `kept` (sorted, distinct)."""
    k = i + 1
    for one in kept:
        if one > k:
            break
        k += 1
    return k


def _sample(length: int, at: Callable[[int], int], tries: int) -> tuple[int, ...]:
    """`tries` of the `length` allocations at(0) < at(1) < ...: all when they are no more; else the first and
    the last `edge` (EDGE, or a quarter of the tries when they are fewer than 4 * EDGE) and the rest of the tries
    between, each the middle of an equal share of the allocations between."""
    if length <= tries:
        return tuple(map(at, range(length)))
    edge = min(EDGE, tries // 4)
    between, shares = length - 2 * edge, tries - 2 * edge
    spread = [edge + (2 * i + 1) * between // (2 * shares) for i in range(shares)]
    return tuple(map(at, (*range(edge), *spread, *range(length - edge, length))))


def check_alloc_failure(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Each allocation of each call (or a fixed set of them in a call of many: allocations_to_fail) in turn
    returns NULL; the call must then fail cleanly (or succeed regardless), and llm_destroy must still free
    everything."""
    if sub.kind != "c":
        raise NotApplicable("allocations are counted and failed only in C submissions")
    with closing(sub.adapter()) as adapter:
        # with llm_destroy at the end: a destroy that leaks or crashes anyway is the llm_destroy item's bug
        finding = replay(adapter, Program(ALLOCATING.name, (*ALLOCATING.steps, Step("llm_destroy"))), ANY_ORDER)  # every rule but block ids and list order, which others own
    if finding:
        raise NotRun(f"with every allocation succeeding, call {finding.step} {finding.call} already goes wrong: "
                     f"{finding.problem} (a bug the other tests report)")
    adapter = sub.adapter()
    try:
        try:
            seen = _allocations(adapter, ALLOCATING.steps)
        except ImplementationFailure as failure:
            return Outcome(False, f"{ALLOCATING.name}: {failure}, with no allocation failing [rule: {ROBUSTNESS}]")
        passed_over = []  # failures that left a free count off from the implementation's own ref_count
        counts = [count for count, _, _ in seen]
        chosen = [allocations_to_fail(*facts) for facts in seen]
        for index, ks in enumerate(chosen):
            for k in ks:
                finding = _inject(adapter, ALLOCATING.steps, index, k)
                if finding and finding.difference.aspect == FREE_COUNT:  # Constraint 5's, whatever the path
                    passed_over.append(finding)
                elif finding:
                    return Outcome(False, finding.message, listing(finding.calls, finding.step),
                                   student=student_text(finding, "c"))
    finally:
        adapter.close()
    done = _done(counts, chosen)
    if passed_over:
        return Outcome(True, f"{done}; {passed_over_note(passed_over[0])}", excuse=excuse_for(passed_over))
    return Outcome(True, done)


def _done(counts: list[int], chosen: list[tuple[int, ...]]) -> str:
    """What was tried, in words: every allocation, or how many of how many."""
    total, tried = sum(counts), sum(map(len, chosen))
    if tried == total:
        return f"{total} allocations failed one at a time"
    return (f"{tried} of the {total} allocations failed one at a time (every allocation of a call making at "
            f"most {FAILED_PER_CALL}; of a longer call {FAILED_PER_CALL}: first the blocks it kept that hold the "
            f"engine's objects, then the others it kept, then the rest, each group's first and last and an even "
            f"spread between when it holds more than its share)")


def _allocations(adapter: Any, steps: tuple[Step, ...]) -> list[tuple[int, tuple[int, ...] | None, tuple[int, ...]]]:
    """How many allocations each step makes when none fails, which of them it kept (None: not known), and which of
    those hold the engine's own objects."""
    adapter.close()
    named(adapter, f"{ALLOCATING.name} (no allocation failing)")
    seen, engine = [], None
    for step in steps:
        engine, _ = _call(adapter, step, engine)
        objects = adapter.kept_objects(engine) if adapter.last_call.kept is not None else None
        seen.append((adapter.last_call.allocations, adapter.last_call.kept, objects or ()))
    return seen


def _expect(model: Model, step: Step, engine: Any) -> Call:
    """Applies a step to the model (with NULL where the engine goes when the implementation holds none); the
    Call as made."""
    return predict(model, step, engine is not None)[0]


def _inject(adapter: Any, steps: tuple[Step, ...], index: int, k: int) -> Finding | None:
    """Replays steps[:index] on a fresh driver, then steps[index] with its k-th allocation failing."""
    adapter.close()
    scenario = f"allocation_failure (allocation {k} of step {index + 1} failing)"
    named(adapter, scenario)
    model, engine, calls = Model(), None, []
    for step in steps[:index]:
        calls.append(_expect(model, step, engine))
        engine, _ = _call(adapter, step, engine)
    before = copy.deepcopy(model)
    calls.append(_expect(model, steps[index], engine))
    live_before = adapter.observe(engine).heap.live_blocks if engine is not None else 0
    adapter.fail_allocation(k)
    try:
        after, returned = _call(adapter, steps[index], engine)
        adapter.fail_allocation(None)
        if not adapter.last_call.injected_failure:
            return None
        refused = returned is None or returned == -1
        expected, engine = (before, engine) if refused else (model, after)
        seen = adapter.observe(engine)
        problem = first_difference(expected, seen, False, modulo=ANY_ORDER)
        if not problem and refused and seen.heap.live_blocks != live_before:
            problem = Difference(LEAK, "heap blocks the failed call left allocated", 0, seen.heap.live_blocks - live_before)
        if not problem and engine is not None:
            status = adapter.llm_destroy(engine)
            left = adapter.observe(None).heap.live_blocks
            if status != 0 or left:
                problem = Difference(LEAK, "llm_destroy afterwards: its status and the heap blocks left", "0 and 0",
                                     f"{status} and {left}")
    except ImplementationFailure as failure:
        problem = Difference(CRASH, "", None, str(failure))
    if not problem:
        return None
    rule = rule_of(problem, calls[index]) if problem.aspect == FREE_COUNT else ROBUSTNESS
    return Finding(scenario, index + 1, calls[index], problem, rule, calls=calls, model=model)
