"""Robustness under allocation failure (reported, 0 points in the default rubric): every allocation of every
call of a fixed program fails in turn, one per try; the call must then fail cleanly (or succeed regardless), and
llm_destroy must still free everything. C only: the driver counts allocations and the grader fails the k-th.

Every allocation, with no sample: an unchecked allocation is found wherever the submission puts it, however many
others surround it. The work is bounded by MOST_PER_CALL: a call of the program making more allocations than that
(with none failing) leaves the item not run, with why, rather than tried in part. A call's count is at least the
blocks the grader saw become live (adapter.py): a submission claiming fewer cannot shrink it; one claiming more
only stops its own item. A try passes only on a failure the grader made itself: natively its ledger counts every
request for a fresh block (granted, failed or past the heap's budget) and fails the k-th of the call first, whatever
the answer would have been; a try in which no allocation was failed (the call asked for fewer when one was to
fail) fails the item, and so does a call that makes more or fewer allocations than counted in its try past the
count (k = count + 1, where nothing fails). Each try replays the program from a fresh driver: no state a failure left behind can
reach the next try; and the tries run in an order no try can know (`_shuffled`), so none can tell its k by counting
the tries before it."""

import copy
import secrets
from contextlib import closing
from typing import Any, Mapping

from oracle.grading.grader import ANY_OTHER, Excuse, NotApplicable, NotRun, Outcome, Seen
from oracle.hw3.c.stray import named
from oracle.hw3.feedback import student_text
from oracle.hw3.compare import first_difference
from oracle.difference import Difference
from oracle.hw3.difference import CALL_ALLOCATIONS, CRASH, FREE_COUNT, LEAK
from oracle.hw3.call import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3 import programs
from oracle.hw3.replay import Finding, listing, replay
from oracle.hw3.step import call_on as _call, expected_calls, predict
from oracle.hw3.rules import ROBUSTNESS, item_of, rule_of
from oracle.program import Program, Step
from oracle.hw3.verdicts import LENIENT, Submission

ANY_ORDER = LENIENT | {"list_order"}  # block ids up to a renaming, the list as a set of ids: others own them

MOST_PER_CALL = 64  # the most allocations of one call the grader fails, each in turn (one replay each): the worst
# case, six calls of 64, is 384 replays, well inside an item's time on a loaded machine, so the count decides, never the clock
ALLOCATING = programs.load(programs.ALLOCATING)  # programs/allocation_failure.txt


def check_alloc_failure(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Each allocation of each call in turn returns NULL; the call must then fail cleanly (or succeed regardless),
    and llm_destroy must still free everything. Not run when a call makes more than MOST_PER_CALL allocations."""
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
            counts = _allocations(adapter, ALLOCATING.steps)
        except ImplementationFailure as failure:
            return Outcome(False, f"{ALLOCATING.name}: {failure}, with no allocation failing [rule: {ROBUSTNESS}]")
        _within_bound(counts)
        passed_over: dict[tuple[int, int], Finding] = {}  # failures that left a free count off from the
        # implementation's own ref_count
        failed: tuple[tuple[int, int], Finding] | None = None  # the first failing try in the program's order
        for index, k in _shuffled(counts):
            if failed is not None and (index, k) > failed[0]:
                continue  # a later try than one already failing: its finding would not be the one reported
            finding = _inject(adapter, ALLOCATING.steps, index, k, counts[index])
            if finding and finding.difference.aspect == FREE_COUNT:  # Constraint 5's, whatever the path
                passed_over[index, k] = finding
            elif finding:
                failed = (index, k), finding
    finally:
        adapter.close()
    if failed is not None:
        finding = failed[1]
        return Outcome(False, finding.message, listing(finding.calls, finding.step), student=student_text(finding, "c"))
    done = f"{sum(counts)} allocations failed one at a time"
    if passed_over:  # each try's free count off (its rule's item's), said as the first try shows it
        first = passed_over[min(passed_over)]
        owners = frozenset(item_of(finding.rule) or ANY_OTHER for finding in passed_over.values())
        whose = f"item {item_of(first.rule)}" if item_of(first.rule) else f"rule {first.rule}"
        seen = Seen(first.message, f"The calls ({first.program}):\n{listing(first.calls, first.step)}",
                    student=student_text(first, "c"))
        return Outcome(True, f"{done}; not checked past {first.program} step {first.step} {first.call}: "
                       f"{first.problem} (that is {whose}'s to judge)", excuse=Excuse(owners, seen))
    return Outcome(True, done)


def _shuffled(counts: list[int]) -> list[tuple[int, int]]:
    """Every try, (call index, k), in an order drawn from the operating system's randomness, a secret of this
    grade's that no run can read: the tries are fresh drivers of one submission, and a try that could count the
    tries before it (a mark in the kernel's page cache, tests/test_tamper_cache_quiet.py) would otherwise know its k
    and put a checked allocation where its unchecked one was to fail. The verdict and the try reported (the first
    failing one in the program's order) do not depend on the order. Each call also has one try past its count
    (k = count + 1), which fails nothing: a process that could tell the counting run from a try (and so put a checked
    allocation before its unchecked last one in every try) makes more allocations there than it was counted making."""
    tries = [(index, k) for index, count in enumerate(counts) for k in range(1, count + 2)]
    secrets.SystemRandom().shuffle(tries)
    return tries


def _within_bound(counts: list[int]) -> None:
    """Raises NotRun, naming the first call that made more than MOST_PER_CALL allocations with none failing."""
    calls, _ = expected_calls(ALLOCATING)
    for index, count in enumerate(counts):
        if count > MOST_PER_CALL:
            raise NotRun(f"{ALLOCATING.name}: call {index + 1} {calls[index]} made {count} allocations with none "
                         f"failing; the grader fails each allocation of a call in turn, up to {MOST_PER_CALL} a call")


def _allocations(adapter: Any, steps: tuple[Step, ...]) -> list[int]:
    """How many allocations each step makes when none fails."""
    adapter.close()
    named(adapter, f"{ALLOCATING.name} (no allocation failing)")
    counts, engine = [], None
    for step in steps:
        engine, _ = _call(adapter, step, engine)
        counts.append(_made(adapter))
    return counts


def _made(adapter: Any) -> int:
    """The last call's allocations: the driver's count, or the requests the grader's ledger saw where more (the
    grader's count can only add)."""
    return max(adapter.last_call.allocations, adapter.last_call.asked)


def _expect(model: Model, step: Step, engine: Any) -> Call:
    """Applies a step to the model (with NULL where the engine goes when the implementation holds none); the
    Call as made."""
    return predict(model, step, engine is not None)[0]


def _inject(adapter: Any, steps: tuple[Step, ...], index: int, k: int, counted: int) -> Finding | None:
    """Replays steps[:index] on a fresh driver, then steps[index] with its k-th allocation failing; `counted`: the
    allocations steps[index] made with none failing. A k past it fails nothing: the call must then make as many
    allocations as counted and do what the model does."""
    adapter.close()
    past = k > counted
    scenario = (f"allocation_failure (step {index + 1} as counted, none failing)" if past else
                f"allocation_failure (allocation {k} of step {index + 1} failing)")
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
        if past and (adapter.last_call.injected_failure or _made(adapter) != counted):
            problem = Difference(CALL_ALLOCATIONS, "allocations, none failing", f"{counted}, as when counted",
                                 f"{_made(adapter)}: the call allocated otherwise than when it was counted")
            return Finding(scenario, index + 1, calls[index], problem, ROBUSTNESS, calls=calls, model=model)
        if not past and not adapter.last_call.injected_failure:  # a pass rests on a failure the grader made and saw handled
            made = _made(adapter)
            problem = Difference(CALL_ALLOCATIONS, f"allocation {k} (the one the grader fails)",
                                 f"asked for, as with none failing ({k} or more allocations)",
                                 f"{made} allocation(s), none failed: the call allocated otherwise when one was to fail")
            return Finding(scenario, index + 1, calls[index], problem, ROBUSTNESS, calls=calls, model=model)
        refused = not past and (returned is None or returned == -1)
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
