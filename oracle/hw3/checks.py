"""The HW3 rubric's checks, one per item, each enforcing one rule of the spec.

Directed checks are fixed programs (program files in programs/, named per item by programs.py) replayed through the submission's adapter and the model
(replay.py); after every call every difference is listed (compare.py), each a structured value whose rule is
a property of it (rules.py). An item fails on the first difference of its own rule, a failure reading
`scenario: step N call: what differs: expected X, got Y [rule: R]`; it reads past another rule's bug (the
model takes over the implementation's state) and says in one line what it read past, by the one judge of every
family (oracle/grading/judge.py, on verdicts.py's facts).
Block ids are compared up to a renaming except by first_fit. The fuzz check runs the HW3 state machine,
strict on everything; memory safety runs valgrind and our own heap accounting; robustness makes each
allocation fail in turn. Every failed item with a program behind it gets a standalone repro C file next to
the report.
"""

import dataclasses
from typing import Any, Mapping

from hypothesis.reporting import with_reporter

from oracle.grading.grader import Check, Incomplete, NotApplicable, NotRun, Outcome, joined
from oracle.grading.python_family import FUZZ_LIMITS  # the core's fuzz item's limits: the same options
from oracle.difference import Difference
from oracle.hw3.difference import CRASH, POOL
from oracle.hw3.evidence import item_not_graded
from oracle.hw3.machine import Divergence
from oracle.hw3.c.stray import named
from oracle.hw3 import programs
from oracle.hw3.effects import stray_write
from oracle.hw3.replay import Finding
from oracle.hw3.rules import ITEMS, STRAY_WRITE, rule_of
from oracle.grading.judge import directed
from oracle.hw3.verdicts import JUDGE, LENIENT, Submission, built as _built, failed, one_excuse, scenario_replays
from oracle.hw3.verdicts import with_probes as _with_probes
from oracle.family import family_named
from oracle.run_cpu import HUNG_WALL
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


def _directed(sub: Submission, item: str, options: Mapping[str, Any], modulo: frozenset[str] = LENIENT) -> Outcome:
    """The item's programs (programs.py: its `programs` option, else the shipped ones) replayed, and judged by the one
    judge of every family (oracle/grading/judge.py) on HW3's facts (verdicts.JUDGE)."""
    replays = scenario_replays(programs.for_item(item, options), modulo)
    return directed(item, ITEMS[item], JUDGE, replays).run(sub, options)


def _directed_check(item: str, *probes: str, modulo: frozenset[str] = LENIENT) -> Check:
    """A directed item: its programs run as _directed runs them, then its white-box probes (none: the programs
    alone)."""

    def check(sub: Submission, options: Mapping[str, Any]) -> Outcome:
        outcome = _directed(sub, item, options, modulo)
        return _with_probes(outcome, sub, *probes) if probes else outcome

    return Check(item, ITEMS[item], check, _programs(item), PROGRAM_LIMITS)


def check_big_pool(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Beyond the spec's tests: blocks past 2^25 of a 2 GiB pool, where an `int` byte offset overflows. Its own
    item, so a course can weigh or drop it (C only: a Python int does not overflow)."""
    if sub.kind != "c":
        raise NotApplicable("an int byte offset overflows only in C")
    _built(sub)
    return _with_probes(None, sub, "big_pool")


def check_l1_traversal(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """free_sequence and fork_sequence must visit all 16 L1 slots: sequences that use all 16 (and slot 15 with
    one block) freed and forked, then the probes, which edit a live block table to leave NULL slots between
    live ones (through the API the L2 tables are always contiguous)."""
    try:
        outcome = _directed(sub, "l1_traversal", options)
    except NotRun as stop:  # another rule's bug stopped them first: the probes may still check the walk
        try:
            probed = _with_probes(None, sub, "l1_gap_free", "l1_gap_fork")  # not run either when they check nothing
        except NotApplicable:  # the probes are not graded for this submission (a Python one): the stop stands
            raise stop from None
        read = one_excuse(stop.excuse)
        if not probed.passed or read is None:
            return probed
        return Outcome(True, f"{stop}; {probed.message}" if probed.message else str(stop), excuse=joined(read, probed.excuse))
    return _with_probes(outcome, sub, "l1_gap_free", "l1_gap_fork")


# ---- the stateful fuzz ----------------------------------------------------------------------------------

FUZZ_OPTIONS = {"seed": 110, "examples": 120, "steps": 50, "shrink_replays": 2000, "seconds": 300.0}


def check_fuzz(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """The HW3 state machine against the oracle: a fixed seed and budgets that are counts (`examples`
    programs, `shrink_replays` replays to shrink a failure), so a submission gets the same verdict and
    program on any machine. `seconds` is only a safety net: a run that reaches it before deciding is
    `incomplete`, never a pass."""
    built = _built(sub)
    factory = lambda: named(built(), "a program of the fuzzing test")  # noqa: E731  (each example's own adapter)
    seed = sub.seed if sub.seed is not None else options["seed"]
    with with_reporter(lambda _: None):  # Hypothesis's own warnings are ours to word
        report = fuzz(family_named("hw3"), sub.path, factory, examples=options["examples"], steps=options["steps"], seed=seed,
                      shrink_replays=options["shrink_replays"], seconds=options["seconds"])
    stats = report.stats
    ran = f"{stats.examples} of {options['examples']} programs, {stats.steps} calls, seed {seed}"
    if report.cut_short == "generate-seconds":
        raise Incomplete(f"stopped at the {options['seconds']:g} s time limit (CPU seconds; "
                         f"{HUNG_WALL * options['seconds']:g} s of wall clock) after {ran}, no divergence so far "
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


from oracle.hw3.alloc_failure import check_alloc_failure  # noqa: E402
from oracle.hw3.memory_safety import MEMCHECK_LIMITS, MEMCHECK_OPTIONS, check_memory_safety  # noqa: E402
from oracle.hw3.stray_charge import charging  # noqa: E402

def _programs(item: str) -> dict[str, list[str]]:
    """A directed check's option: the programs it runs (programs.py), which a course's rubric may name."""
    return {"programs": list(programs.BY_ITEM[item])}


def _names(value: list) -> str | None:
    """What is wrong with a `programs` option: it names one program file or more (NAME for programs/NAME.txt)."""
    if value and all(isinstance(name, str) and programs.NAME.fullmatch(name) for name in value):
        return None
    return "must be a non-empty list of program names (NAME for programs/NAME.txt: letters, digits, _ . -)"


PROGRAM_LIMITS = {"programs": _names}


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


CHECKS: dict[str, Check] = {  # each charges memory_safety with the stray accesses its runs met (stray_charge.py)
    check.id: dataclasses.replace(check, run=charging(_on_its_evidence(check.id, check.run)))
    for check in (
        Check("compiles", ITEMS["compiles"], check_compiles),
        _directed_check("llm_init", "init_untouched"),
        _directed_check("create_free", "many_sequences", "l2_hole_free", "two_engines"),
        _directed_check("fork", "l2_hole_fork", "many_forks"),
        _directed_check("append_cow"),
        _directed_check("llm_destroy", "destroy_keeps_pool"),
        Check("big_pool", ITEMS["big_pool"], check_big_pool),
        _directed_check("null_engine"),
        # calls that must fail and allocate nothing, also as the first calls of an engine (where a lazily built
        # registry is first allocated), of a second engine, and as the sequences grow (a registry grown in steps)
        _directed_check("check_before_allocate"),
        _directed_check("first_fit", modulo=EXACT),
        # only append_kv writes the pool, and only its record (or a copy): on a pool of whole blocks, and on one
        # with a trailing partial block, which nothing may write either
        _directed_check("no_premature_writes"),
        _directed_check("free_count"),
        Check("l1_traversal", ITEMS["l1_traversal"], check_l1_traversal, _programs("l1_traversal"), PROGRAM_LIMITS),
        _directed_check("tail_insertion"),
        Check("fuzz", ITEMS["fuzz"], check_fuzz, FUZZ_OPTIONS, FUZZ_LIMITS,
              catch_all=True),
        Check("memory_safety", ITEMS["memory_safety"], check_memory_safety, MEMCHECK_OPTIONS, MEMCHECK_LIMITS),
        Check("alloc_failure", ITEMS["alloc_failure"], check_alloc_failure),
    )
}
