"""The HW3 rubric's checks, one per item, each enforcing one rule of the spec.

Directed checks are fixed programs (scenarios) replayed through the submission's adapter and the Model
together; after every call the return value and the whole observed state are compared with
`first_divergence`, so a failure reads `scenario: step N call: what differs: expected X, got Y [rule: R]`.
A directed check compares leniently the aspects whose rule another item owns (`modulo`: block ids up to a
renaming, the active list's order), so one bug costs the item of the rule it breaks, while each item still
checks its own rule exactly; on a call that must fail, the implementation's state must also equal its own
state before the call. The fuzz check runs the HW3 state machine, strict on everything; memory safety runs valgrind and our own heap accounting;
robustness makes each allocation fail in turn. Every failed item with a program behind it gets a
standalone repro C file next to the report.
"""

import copy
import dataclasses
import re
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from hypothesis.reporting import with_reporter

from oracle.grading.grader import Check, Incomplete, NotApplicable, NotRun, Outcome
from oracle.grading.rubric import at_least, positive
from oracle.hw3 import FAMILY
from oracle.hw3.adapters import Adapter
from oracle.hw3.c.build import BuildResult, OFFICIAL_FLAGS
from oracle.hw3.compare import CONSISTENT_FREE_COUNT, first_divergence, state_change
from oracle.hw3.machine import POINTER_CALLS, Call, Divergence, observed
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure, Observation
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, MAX_LOGICAL_BLOCKS
from oracle.runner import fuzz
from oracle.sandbox import Sandbox

TASKS = {
    "llm_init": "Task 1: Engine Initialization",
    "create_sequence": "Task 2: Sequence Creation & Deletion",
    "free_sequence": "Task 2: Sequence Creation & Deletion",
    "fork_sequence": "Task 3: Sequence Forking",
    "append_kv": "Task 4: Virtual Addressing, CoW & Appending",
    "llm_destroy": "Task 5: Engine Destruction",
}
POINTER_SAFETY = "Constraint 1: Pointer Safety"
CHECK_BEFORE_ALLOCATE = "Constraint 2: Check Before Allocate"
FIRST_FIT = "Constraint 3: First-Fit Allocation"
NO_PREMATURE_WRITES = "Constraint 4: No Premature Memory Modification"
FREE_BLOCK_CONSISTENCY = "Constraint 5: Free Block Consistency"
REF_COUNTING = "Copy-on-Write & Reference Counting"
TAIL_INSERTION = "Tasks 2-3: append to the tail of active_seqs (head->prev)"
MEMORY_SAFETY = "Compilation Standard: Valgrind-clean, 0 bytes lost"

# What a directed check compares leniently: the aspects whose rules other items own (see compare.py).
# first_fit owns the block ids, tail_insertion the list order; the fuzz item compares everything exactly.
LENIENT = frozenset({"block_ids", "list_order"})
OWN_BLOCK_IDS = frozenset({"list_order"})
OWN_LIST_ORDER = frozenset({"block_ids"})
OUTPUT_SHOWN = 2000  # characters of what the submission printed, in a failed item's details


@dataclass
class Submission:
    """What the checks grade, and where they leave what a student needs (repro files)."""

    path: str
    kind: str  # "c" or "python"
    factory: Callable[[], Adapter] | None  # None when a C submission does not build
    out_dir: Path
    workdir: Path  # build cache and scratch space
    build: BuildResult | None = None  # C only
    source: Path | None = None  # C only: the llm_memory.c graded
    timeout: float = 2.0  # per call
    not_loaded: str | None = None  # why a Python submission does not load (factory is None then)
    seed: int | None = None  # overrides the fuzz item's seed
    deadline: float | None = None  # time.monotonic() by which the whole grade must end; None: no limit
    fuzz_failure: Divergence | None = None  # set by the fuzz check, for the memory-safety check's repro run
    repro_sources: dict[str, str] = field(default_factory=dict)  # file name -> C source, written this run
    sandbox: Sandbox | None = None  # where its code runs (None: the process's shared sandbox)
    refused: str = ""  # why the submission was refused before any build (C only): its own fault
    findings: dict[str, "Finding"] = field(default_factory=dict)  # item id -> where it failed (its HTML picture)
    _probes: dict[str, Any] | None = None

    def adapter(self) -> Adapter:
        return _built(self)()

    def probes(self) -> dict[str, Any]:
        """The white-box probes' results by name, run once per submission."""
        if self._probes is None:
            from oracle.hw3.probes import run_probes
            from oracle.hw3.pyprobes import run_python_probes

            if self.kind == "c":
                probes = run_probes(self.source, self.workdir / "probes", timeout=5 * self.timeout, flags=self.flags,
                                    sandbox=self.sandbox)
            else:  # a RemotePython: the probes run in the submission's child process, with longer calls
                probes = run_python_probes(lambda: _built(self)(timeout=5 * self.timeout))  # type: ignore[call-arg]
            self._probes = {p.name: p for p in probes}
        return self._probes

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags the submission is graded with: the official ones, or those without -Werror when only
        warnings stop the official build (the "compiles" item fails, the others are graded)."""
        return self.build.flags if self.build is not None else OFFICIAL_FLAGS


# ---- scenarios: fixed programs --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    api: str
    args: tuple[int, ...]
    null: bool = False  # a NULL engine (for llm_init: a NULL pool)


def init(blocks: int, extra: int = 0, null_pool: bool = False) -> Step:
    return Step("llm_init", (blocks * BLOCK_SIZE + extra,), null_pool)


def create(seq_id: int, initial_kv_len: int) -> Step:
    return Step("create_sequence", (seq_id, initial_kv_len))


def fork(parent_seq_id: int, new_seq_id: int) -> Step:
    return Step("fork_sequence", (parent_seq_id, new_seq_id))


def append(seq_id: int, kv_data: int) -> Step:
    return Step("append_kv", (seq_id, kv_data))


def free(seq_id: int) -> Step:
    return Step("free_sequence", (seq_id,))


def destroy() -> Step:
    return Step("llm_destroy", ())


def null(step: Step) -> Step:
    return dataclasses.replace(step, null=True)


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]
    strict_alloc: bool = False  # a failing call must not allocate (Constraint 2), even a malloc it frees


@dataclass
class Finding:
    """Where a replay first went wrong."""

    scenario: str
    step: int  # 1-based
    call: Call
    problem: str
    calls: list[Call]
    model: Model
    output: str = ""  # what the submission printed
    rule_name: str | None = None  # when the check, not the difference, names the rule
    modulo: frozenset[str] = frozenset()  # the aspects the comparison was lenient on
    seen: Observation | None = None  # the implementation's state after the call, when it could be read
    program_step: int | None = None  # the fuzz item: the printed program's line that made the call

    @property
    def rule(self) -> str:
        return self.rule_name or rule_for(self.problem, self.call, self.modulo)

    @property
    def message(self) -> str:
        step = self.step if self.program_step is None else self.program_step
        return f"{self.scenario}: step {step} {self.call}: {self.problem} [rule: {self.rule}]"


_TABLE = re.compile(r"^seq (-?\d+) block_table")
_TABLE_ENTRY = re.compile(r"^seq (-?\d+) block_table\[\d+\]\[\d+\]: expected (-?\d+), got (-?\d+)$")


def rule_for(problem: str, call: Call, modulo: frozenset[str] = frozenset()) -> str:
    """The spec rule a difference breaks, judged from what differs and the call that made it differ (and
    what the comparison was lenient on: a block_table difference up to a renaming is not about first fit)."""
    if call.null and call.api != "llm_init":
        return POINTER_SAFETY
    if (problem.startswith(("heap: a failing call", "a failing call changed"))
            or "block_table[" in problem and fails(call.api, call.expected)):
        return CHECK_BEFORE_ALLOCATE
    if problem.startswith("heap:"):
        return TASKS["llm_destroy"]
    if problem.startswith(("pool block", "pool byte", "guard zone")) or " record " in problem:
        if call.api in ("llm_init", "create_sequence", "fork_sequence"):
            return NO_PREMATURE_WRITES
        if problem.startswith("guard zone"):
            return MEMORY_SAFETY
    if call.api == "llm_init":
        return TASKS["llm_init"]  # the new engine's counts, ref_count array or list head
    if problem.startswith("free_local_blocks"):
        # consistent with the implementation's own ref_count array: the call took the wrong number of blocks
        return TASKS[call.api] if CONSISTENT_FREE_COUNT in problem else FREE_BLOCK_CONSISTENCY
    table = _TABLE.match(problem)
    if table and call.api in ("create_sequence", "append_kv", "free_sequence") and int(table[1]) != call.args[0]:
        return TASKS["fork_sequence"]  # the call changed another sequence's table: a fork shared an L2 table
    if call.api in ("create_sequence", "append_kv") and "block_ids" not in modulo:
        entry = _TABLE_ENTRY.match(problem)
        if entry and int(entry[2]) >= 0 and int(entry[3]) >= 0:
            return FIRST_FIT  # two block ids: first fit would have picked the other one
        if problem.startswith("ref_count[") and problem.endswith("expected 1, got 0"):
            return FIRST_FIT  # the block first fit picks was left free
    if problem.startswith("ref_count"):
        return REF_COUNTING
    if problem.startswith("active list:") and call.api in ("create_sequence", "fork_sequence") and "list_order" not in modulo:
        return TAIL_INSERTION
    return TASKS[call.api]


def fails(api: str, returned: bool | int) -> bool:
    """Whether a call's return value is its failure value: NULL for the pointer calls, -1 for the others
    (0 == False in Python, so `returned in (False, -1)` would count a successful append as failing)."""
    return returned is False if api in POINTER_CALLS else returned == -1


def _shown(api: str, value: bool | int) -> str:
    if api in POINTER_CALLS:
        return POINTER_CALLS[api] if value else "NULL"
    return str(value)


def replay(adapter: Adapter, scenario: Scenario, modulo: frozenset[str] = frozenset()) -> Finding | None:
    """Runs a scenario through the adapter and the model, comparing after every call (leniently on the
    aspects in `modulo`); the first difference. When `modulo` is not empty, a call the model expects to fail
    must also leave the implementation's state exactly as it was (see compare.state_change)."""
    model, engine, calls, before = Model(), None, [], None
    for number, step in enumerate(scenario.steps, 1):
        seen = None
        if step.api == "llm_init":
            expected = model.llm_init(step.args[0], step.null)
            call = Call("llm_init", step.args, step.null, expected.returned)
        else:
            null_engine = step.null or engine is None
            expected = getattr(model, step.api)(null_engine, *step.args)
            call = Call(step.api, step.args, null_engine, expected.returned)
        calls.append(call)
        try:
            if step.api == "llm_init":
                returned = engine = adapter.llm_init(step.args[0], step.null)
            else:
                returned = getattr(adapter, step.api)(None if step.null else engine, *step.args)
                if step.api == "llm_destroy" and not step.null:
                    engine = None
            got = returned is not None if step.api in POINTER_CALLS else returned
            problem = None
            if got != expected.returned:
                problem = f"return value: expected {_shown(step.api, expected.returned)}, got {_shown(step.api, got)}"
                seen = observed(adapter, engine)
            else:
                failed = fails(step.api, expected.returned)
                seen = adapter.observe(engine)
                problem = first_divergence(model, seen, failed and scenario.strict_alloc, modulo=modulo)
                if not problem and modulo and failed and before is not None and step.api != "llm_init":
                    problem = state_change(before, seen)
                before = seen
        except ImplementationFailure as failure:
            problem = str(failure)
        if problem:
            return Finding(scenario.name, number, call, problem, calls, model, _printed(adapter), modulo=modulo, seen=seen)
    return None


def _printed(adapter: Adapter) -> str:
    return getattr(adapter, "output", "")


def _listing(calls: list[Call], failed_at: int) -> str:
    lines = []
    for number, call in enumerate(calls, 1):
        mark = "   <-- differs here" if number == failed_at else ""
        lines.append(f"{number:>3}  {call} -> {_shown(call.api, call.expected)} expected{mark}")
    return "\n".join(lines)


def _run_scenarios(
    sub: Submission, item: str, scenarios: list[Scenario], modulo: frozenset[str] = LENIENT
) -> Outcome:
    """Each scenario on a fresh adapter, compared leniently on `modulo` (by default every aspect another
    item owns); the item fails on the first scenario that finds a difference."""
    for scenario in scenarios:
        with closing(sub.adapter()) as adapter:
            finding = replay(adapter, scenario, modulo)
        if finding:
            return failed(sub, item, finding)
    return Outcome(True)


def failed(sub: Submission, item: str, finding: Finding, program: str = "") -> Outcome:
    """The Outcome for a finding: the message, the calls that led there, what was printed, a repro file."""
    details = [f"The calls ({finding.scenario}):", _listing(finding.calls, finding.step)]
    if finding.output:
        shown = finding.output[:OUTPUT_SHOWN]
        more = f"\n... ({len(finding.output) - OUTPUT_SHOWN} more characters)" if len(finding.output) > OUTPUT_SHOWN else ""
        details += ["Your code printed:", shown + more]
    repro = None
    sub.findings[item] = finding
    if sub.kind == "c":
        repro, note = _write_repro(sub, item, finding)
        details.append(note)
    return Outcome(False, finding.message, "\n".join(details), program, repro)


def _write_repro(sub: Submission, item: str, finding: Finding) -> tuple[str, str]:
    """Writes the repro next to the report (repro.c for the fuzz item, repro-<item>.c for the others) and
    checks that it builds against the submission with the official flags."""
    from oracle.hw3.repro import build_repro, repro_c

    stem = "repro" if item == "fuzz" else f"repro-{item}"
    source = repro_c(finding.calls, finding.model, finding.message)
    (sub.out_dir / f"{stem}.c").write_text(source)
    sub.repro_sources[stem] = source
    assert sub.source is not None
    binary, compiler = build_repro(source, sub.source, sub.workdir / stem, name=stem, flags=sub.flags, sandbox=sub.sandbox)
    if binary is None:
        return f"{stem}.c", f"{stem}.c does not build against the submission (a pagedcheck bug; please report it):\n{compiler}"
    command = " ".join(["gcc", *sub.flags, "llm_memory.c", f"{stem}.c", "-o", stem])
    return f"{stem}.c", f"Standalone repro {stem}.c, next to llm_memory.h and your llm_memory.c: {command} && ./{stem}"


# ---- the directed checks --------------------------------------------------------------------------------


def check_compiles(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    if sub.kind != "c":
        raise NotApplicable("a Python implementation is not compiled")
    if sub.refused:
        return Outcome(False, f"refused: {sub.refused}")
    assert sub.build is not None
    if sub.build.ok:
        return Outcome(True)
    build = sub.build
    if build.missing_symbols:
        return Outcome(False, f"link failed: undefined symbols {', '.join(build.missing_symbols)}", build.log)
    first = next((line for line in build.log.splitlines() if "error" in line), "compile failed")
    message = f"gcc {' '.join(OFFICIAL_FLAGS)} -c llm_memory.c failed: {first.strip()}"
    if build.lenient_driver is not None:
        message += "; it compiles without -Werror, so the other items are graded on that build"
    return Outcome(False, message, build.log)


def _with_probes(outcome: Outcome, sub: Submission, *probes: str) -> Outcome:
    """A directed check's outcome, then the white-box probes that cover what one engine's API calls cannot show."""
    if not outcome.passed:
        return outcome
    for probe in probes:
        result = sub.probes()[probe]
        if not result.passed:
            return Outcome(False, f"{probe}: {result.detail} [rule: {result.rule}]", f"White-box probe {probe!r} failed.")
    return outcome


def check_llm_init(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    refused = Scenario("llm_init_refuses", (init(10, null_pool=True), init(0, 63), init(0)))
    accepted = Scenario("llm_init", (init(1), init(10, 63), init(300, 1)))  # partial blocks are never used
    return _with_probes(_run_scenarios(sub, "llm_init", [refused, accepted]), sub, "init_untouched")


def check_create_free(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _with_probes(_run_scenarios(sub, "create_free", [Scenario("create_sequence", (
        init(40), create(1, 17), create(2, 16), create(3, 1),
        create(1, 5), create(4, 0), create(4, -3), create(4, 4097), create(4, 37 * KV_PER_BLOCK + 1),
        free(2), free(2), free(99),
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
    cap = Scenario("append_kv_cap", (
        init(257), create(1, 256 * KV_PER_BLOCK - 1), append(1, 5), append(1, 6),  # logical_idx 256: refused
    ))
    return _with_probes(_run_scenarios(sub, "append_cow", [cow, cap]), sub, "big_pool")


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
    ), strict_alloc=True)
    needs_l2 = Scenario("oom_append_needs_l2", (
        init(16), create(1, L2_PT_SIZE * KV_PER_BLOCK), append(1, 7),  # needs block_table[1] and a block
    ), strict_alloc=True)
    new_page = Scenario("oom_append_new_page", (init(2), create(1, 32), append(1, 7)), strict_alloc=True)
    return _run_scenarios(sub, "check_before_allocate", [refusals, needs_l2, new_page])


def check_first_fit(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "first_fit", [Scenario("first_fit", (
        init(12), create(1, 16), create(2, 32), create(3, 16), free(2),
        create(4, 16), create(5, 32),  # into the hole, then across it
        fork(4, 6), append(6, 9), append(4, 9),  # new pages
        free(1), fork(3, 7), append(7, 1),  # block 0 again
        create(8, 5), fork(8, 9), free(3), append(9, 1),  # copy-on-write into the lowest free block
    ))], OWN_BLOCK_IDS)


def check_no_premature_writes(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "no_premature_writes", [Scenario("no_premature_writes", (
        init(8, 13), create(1, 40), append(1, 5), fork(1, 2), free(1), free(2),
        create(3, 48),  # stale records (and magic numbers) are its first 48 records
        create(4, 16), fork(4, 5),
    ))])


def check_free_count(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "free_count", [Scenario("free_count", (
        init(10), create(1, 32), fork(1, 2), free(1),  # still shared by 2: not free
        append(2, 1), fork(2, 3), append(3, 2),  # a new page, then copy-on-write
        free(2), free(3), create(4, 10 * KV_PER_BLOCK), free(4),
    ))])


def check_tail_insertion(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    return _run_scenarios(sub, "tail_insertion", [Scenario("tail_insertion", (
        init(16), create(3, 1), create(1, 1), create(2, 1), fork(1, 7), free(1), create(1, 1), fork(3, 0),
    ))], OWN_LIST_ORDER)


def check_l1_traversal(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """free_sequence and fork_sequence must visit all 16 L1 slots; through the API the L2 tables are always
    contiguous, so the probes edit a live block table to leave a NULL slot between two live ones."""
    _built(sub)
    return _with_probes(Outcome(True), sub, "l1_gap_free", "l1_gap_fork")


def _built(sub: Submission) -> Callable[[], Adapter]:
    if sub.factory is None:
        raise NotRun(f"the module does not load: {sub.not_loaded}" if sub.not_loaded
                     else "the submission does not build (see the compiles item)")
    return sub.factory


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
    """A machine Divergence as a Finding: the step and call located, the trailing 'after <call>' dropped."""
    calls = list(failure.calls)
    call = calls[-1]
    problem = str(failure).splitlines()[0]
    head, sep, tail = problem.rpartition(" after ")
    if sep and tail.split("(")[0] in TASKS:
        # "<what differs> after <call>", or "observing the state after <call>: <why it could not>"
        _, colon, why = tail.partition("): ")
        problem = f"{head}: {why}" if colon else head
    if problem.startswith(f"{call} "):
        problem = problem[len(str(call)) + 1 :]
    return Finding("fuzz", len(calls), call, problem, calls, failure.model, seen=failure.seen, program_step=failure.step)


# ---- memory safety -------------------------------------------------------------------------------------

MEMCHECK_OPTIONS = {"timeout": 20.0}  # s one call may take under valgrind
MEMCHECK_LIMITS = {"timeout": positive}
_LOG_LINES = 60


def check_memory_safety(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Our heap accounting over the fixed battery (nothing may stay allocated while there is no engine),
    then valgrind over the battery and over the fuzz item's minimal failing program, if there is one."""
    if sub.kind != "c":
        raise NotApplicable("valgrind and heap accounting need a C submission")
    from oracle.hw3.memcheck import memcheck
    from oracle.hw3.scenarios import BATTERY, scenario_calls

    _built(sub)
    for name in BATTERY:
        calls, _ = scenario_calls(name)
        with closing(sub.adapter()) as adapter:
            problem = _leak(adapter, name, calls)
        if problem:
            return Outcome(False, f"{problem} [rule: {MEMORY_SAFETY}]", _listing(calls, 0))
    from oracle.hw3.memcheck import battery_programs

    programs = battery_programs()
    if sub.fuzz_failure is not None:  # the fuzz item's minimal failing program, as its repro.c replays it
        programs["the fuzz item's minimal program (repro.c)"] = (sub.fuzz_failure.calls, sub.fuzz_failure.model)
    assert sub.build is not None
    driver = sub.build.driver or sub.build.lenient_driver
    for result in memcheck(driver, programs, timeout=options["timeout"], sandbox=sub.sandbox):
        if not result.clean:
            log = result.log.splitlines()
            shown = log[:_LOG_LINES] + ([f"... ({len(log) - _LOG_LINES} more lines)"] if len(log) > _LOG_LINES else [])
            return Outcome(False, f"valgrind, program {result.name}: {result.summary} [rule: {MEMORY_SAFETY}]", "\n".join(shown))
    return Outcome(True)


def _leak(adapter: Any, name: str, calls: list[Call]) -> str | None:
    """Runs a battery program; the first crash, or heap block still allocated while there is no engine."""
    engine = None
    for number, call in enumerate(calls, 1):
        try:
            engine, _ = make_call(adapter, Step(call.api, call.args, call.null), engine)
            if call.api == "llm_init" and engine is not None and not call.expected:
                adapter.llm_destroy(engine)  # an engine the spec refuses is the llm_init item's bug, not a leak
                engine = None
            heap = adapter.observe(None).heap if engine is None else None
        except ImplementationFailure as failure:
            return f"{name}: step {number} {call}: {failure}"
        if heap is not None and heap.live_blocks:
            return f"{name}: step {number} {call}: {heap.live_blocks} heap block(s) ({heap.live_bytes} bytes) still allocated with no engine"
    return None


# ---- robustness under allocation failure ----------------------------------------------------------------

ROBUSTNESS = "Robustness: a failed malloc leaves no trace (no crash, no leak, no half-built sequence)"
ALLOCATING = Scenario("allocation_failure", (
    init(40), create(1, 20), fork(1, 2), create(3, L2_PT_SIZE * KV_PER_BLOCK + 1),
    create(4, L2_PT_SIZE * KV_PER_BLOCK), append(4, 9),  # the append needs a new L2 table
))


def check_alloc_failure(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """Each allocation of each call in turn returns NULL; the call must then fail cleanly (or succeed
    regardless), and llm_destroy must still free everything."""
    if sub.kind != "c":
        raise NotApplicable("allocations are counted and failed only in C submissions")
    with closing(sub.adapter()) as adapter:
        finding = replay(adapter, ALLOCATING, LENIENT)
    if finding:
        raise NotRun(f"with every allocation succeeding, {finding.message} (see the other items)")
    adapter = sub.adapter()
    try:
        try:
            counts = _allocations(adapter, ALLOCATING.steps)
        except ImplementationFailure as failure:
            return Outcome(False, f"{ALLOCATING.name}: {failure}, with no allocation failing [rule: {ROBUSTNESS}]")
        for index, count in enumerate(counts):
            for k in range(1, count + 1):
                finding = _inject(adapter, ALLOCATING.steps, index, k)
                if finding:
                    return Outcome(False, finding.message, _listing(finding.calls, finding.step))
    finally:
        adapter.close()
    return Outcome(True, f"{sum(counts)} allocations failed one at a time")


def _allocations(adapter: Any, steps: tuple[Step, ...]) -> list[int]:
    """How many allocations each step makes when none fails."""
    adapter.close()
    counts, engine = [], None
    for step in steps:
        engine, _ = make_call(adapter, step, engine)
        counts.append(adapter.last_call.allocations)
    return counts


def make_call(adapter: Any, step: Step, engine: Any) -> tuple[Any, Any]:
    """Makes one call: the engine handle afterwards, and what the call returned."""
    if step.api == "llm_init":
        returned = adapter.llm_init(step.args[0], step.null)
        return returned, returned
    returned = getattr(adapter, step.api)(None if step.null else engine, *step.args)
    return (None if step.api == "llm_destroy" and not step.null else engine), returned


def _expect(model: Model, step: Step, engine: Any) -> Call:
    """Applies a step to the model; the Call as made."""
    if step.api == "llm_init":
        return Call("llm_init", step.args, step.null, model.llm_init(step.args[0], step.null).returned)
    null_engine = step.null or engine is None
    return Call(step.api, step.args, null_engine, getattr(model, step.api)(null_engine, *step.args).returned)


def _inject(adapter: Any, steps: tuple[Step, ...], index: int, k: int) -> Finding | None:
    """Replays steps[:index] on a fresh driver, then steps[index] with its k-th allocation failing."""
    adapter.close()
    model, engine, calls = Model(), None, []
    for step in steps[:index]:
        calls.append(_expect(model, step, engine))
        engine, _ = make_call(adapter, step, engine)
    before = copy.deepcopy(model)
    calls.append(_expect(model, steps[index], engine))
    live_before = adapter.observe(engine).heap.live_blocks if engine is not None else 0
    adapter.fail_allocation(k)
    try:
        after, returned = make_call(adapter, steps[index], engine)
        adapter.fail_allocation(None)
        if not adapter.last_call.injected_failure:
            return None
        refused = returned is None or returned == -1
        expected, engine = (before, engine) if refused else (model, after)
        seen = adapter.observe(engine)
        problem = first_divergence(expected, seen, False, modulo=LENIENT)
        if not problem and refused and seen.heap.live_blocks != live_before:
            problem = f"heap: the failed call left {seen.heap.live_blocks - live_before} block(s) allocated"
        if not problem and engine is not None:
            status = adapter.llm_destroy(engine)
            left = adapter.observe(None).heap.live_blocks
            if status != 0 or left:
                problem = f"llm_destroy afterwards returned {status} and left {left} block(s) allocated"
    except ImplementationFailure as failure:
        problem = str(failure)
    if not problem:
        return None
    scenario = f"allocation_failure (allocation {k} of step {index + 1} failing)"
    return Finding(scenario, index + 1, calls[index], problem, calls, model, rule_name=ROBUSTNESS, modulo=LENIENT)


# ---- the registry ---------------------------------------------------------------------------------------

CHECKS: dict[str, Check] = {
    check.id: check
    for check in (
        Check("compiles", "Compilation Standard: gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2", check_compiles),
        Check("llm_init", TASKS["llm_init"], check_llm_init),
        Check("create_free", TASKS["create_sequence"], check_create_free),
        Check("fork", TASKS["fork_sequence"], check_fork),
        Check("append_cow", TASKS["append_kv"], check_append_cow),
        Check("llm_destroy", TASKS["llm_destroy"], check_llm_destroy),
        Check("null_engine", POINTER_SAFETY, check_null_engine),
        Check("check_before_allocate", CHECK_BEFORE_ALLOCATE, check_check_before_allocate),
        Check("first_fit", FIRST_FIT, check_first_fit),
        Check("no_premature_writes", NO_PREMATURE_WRITES, check_no_premature_writes),
        Check("free_count", FREE_BLOCK_CONSISTENCY, check_free_count),
        Check("l1_traversal", "Tasks 2-3: free_sequence and fork_sequence visit ALL 16 L1 slots", check_l1_traversal),
        Check("tail_insertion", TAIL_INSERTION, check_tail_insertion),
        Check("fuzz", "All rules: stateful fuzzing against the oracle", check_fuzz, FUZZ_OPTIONS, FUZZ_LIMITS),
        Check("memory_safety", MEMORY_SAFETY, check_memory_safety, MEMCHECK_OPTIONS, MEMCHECK_LIMITS),
        Check("alloc_failure", ROBUSTNESS, check_alloc_failure),
    )
}
