"""What the checks grade (a Submission), and HW3's facts for the one judge of every family's directed items
(oracle/grading/judge.py): a difference's rule is enforced by the item rules.py names (`item_of`); the model takes
over the implementation's state past another rule's difference and the program goes on (replay.py), saying which
of its calls could have shown the item's rule's bug (`Replayed.checked`); its own rule's first difference fails it,
with the calls, what the code printed and a standalone repro; a difference read past is said in a student's words."""

import functools
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator

from oracle.grading.grader import ANY_OTHER, Excuse, Excuses, NotApplicable, NotRun, Outcome, Seen, joined
from oracle.grading.judge import Judge, Replayed, Replays
from oracle.hw3.adapters import Adapter
from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.native.build import BuildResult
from oracle.hw3.c.stray import Stray
from oracle.hw3.call import Call
from oracle.hw3.feedback import printed, student_text
from oracle.hw3.machine import Divergence
from oracle.hw3.refusal_rule import refused_alone, same_call
from oracle.hw3.replay import Finding, listing, replay
from oracle.hw3.rules import ITEMS, TASKS, item_of
from oracle.program import Program
from oracle.run_cpu import Budget
from oracle.sandbox import Sandbox

LENIENT = frozenset({"block_ids"})  # every item but first_fit compares block ids up to a renaming


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
    budget: Budget | None = None  # the whole grade's time limit (oracle/run_cpu.py); None: no limit
    fuzz_failure: Divergence | None = None  # set by the fuzz check, for the memory-safety check's repro run
    repro_sources: dict[str, str] = field(default_factory=dict)  # file name -> C source, written this run
    sandbox: Sandbox | None = None  # where its code runs (None: the process's shared sandbox)
    refused: str = ""  # why the submission was refused before any build (C only): its own fault
    findings: dict[str, "Finding"] = field(default_factory=dict)  # item id -> where it failed (its HTML picture)
    strays: list[Stray] = field(default_factory=list)  # natively, every stray access the grader counted (C only)
    _probes: dict[str, Any] | None = None
    _refusals: dict[str, frozenset[tuple[int, ...]]] = field(default_factory=dict)  # by kind of call: those
    # its item's programs show refused alone (refusal_rule.py)

    def adapter(self) -> Adapter:
        return built(self)()

    def witness(self) -> Adapter:
        """An adapter for a second opinion (fresh_pool.py) on an implementation that runs in this process; one
        that runs in a process of its own (a child, a driver) is ended for it, and the witness runs in a fresh
        process of the graded run's own adapter (alone.py)."""
        return built(self)()

    def refuses_alone(self, call: Call, fresh: Callable[[], Adapter]) -> bool:
        """Whether the programs of `call`'s own item, run as that item runs them in implementations `fresh` opens,
        show that call (the same arguments but the sequence id) refused where the model had the blocks before any
        call moved the free count (refusal_rule.py): whose rule a later refusal of it is, where the free count is
        not read. The programs run once per kind of call per submission."""
        if call.api not in self._refusals:
            from oracle.hw3 import programs

            item = item_of(TASKS[call.api])
            self._refusals[call.api] = (frozenset() if item is None else refused_alone(
                fresh, call.api, programs.for_item(item, {}), TASKS[call.api], LENIENT))
        return same_call(call, self._refusals[call.api])

    def probes(self) -> dict[str, Any]:
        """The white-box probes' results by name, run once per submission."""
        if self._probes is None:
            from oracle.hw3.probes import run_probes
            from oracle.hw3.pyprobes import run_python_probes

            factory = built(self)
            if self.kind == "c":  # each probe drives its own process of the graded driver; its strays are noted
                assert self.build is not None and self.build.graded_driver is not None
                probes = run_probes(self.build.graded_driver, timeout=5 * self.timeout, sandbox=self.sandbox,
                                    strays=self.strays)
            else:  # served (pyremote.py): the probes run in the submission's child process, with longer calls
                probes = run_python_probes(lambda: factory(timeout=5 * self.timeout))  # type: ignore[call-arg]
            self._probes = {p.name: p for p in probes}
        return self._probes

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags the submission is graded with: the official ones, or those without -Werror when only
        warnings stop the official build (the "compiles" item fails, the others are graded)."""
        return self.build.flags if self.build is not None else OFFICIAL_FLAGS


# the one judge with HW3's facts: a rule's item is the one rules.py names (ANY_OTHER: none); the model takes over
# past another rule's difference and the program goes on, its replay saying what it checked (Replayed.checked); an
# item that fails of its own charges nothing it read past: its bug may have made them (fork_no_incref's create
# and append differences), and the fuzz item charges the rule of any other bug
JUDGE = Judge(lambda item, step: False, goes_on=True, owner=lambda rule: item_of(rule) or ANY_OTHER,
              failed_reads_cost=False)


def scenario_replays(scenarios: list[Program], modulo: frozenset[str] = LENIENT) -> Replays:
    """An item's programs (`scenarios`), each on a fresh adapter and compared leniently on `modulo` (block ids up
    to a renaming, by default), replayed for the judge: the first difference of its own rule, else the first of
    another rule read past, and whether a call of the program could have shown its rule's bug."""

    def replays(item: str, sub: Submission) -> Generator[Replayed, None, None]:
        rule = ITEMS[item]
        for scenario in scenarios:
            checked: list[Call] = []
            with closing(sub.adapter()) as adapter:
                found = replay(adapter, scenario, modulo, owns=lambda r: r == rule, checked=checked,
                               fresh=sub.witness, refuses_alone=sub.refuses_alone)
            yield Replayed(scenario, found, _calls, checked=bool(checked),
                           student=lambda finding: student_text(finding, sub.kind),
                           failed=lambda finding: failed(sub, item, finding))

    return replays


def _calls(finding: Finding) -> str:
    return f"The calls ({finding.program}):\n{listing(finding.calls, finding.step)}"


def failed(sub: Submission, item: str, finding: Finding, program: str = "") -> Outcome:
    """The Outcome for a finding: the message, the calls that led there, what was printed, a repro file."""
    sub.findings[item] = finding
    details = [f"The calls ({finding.program}):", listing(finding.calls, finding.step)]
    if finding.output:
        details += ["Your code printed:", printed(finding.output)]
    if sub.kind != "c":
        return Outcome(False, finding.message, "\n".join(details), program, student=student_text(finding, sub.kind))
    repro, note, command, built_ok = _write_repro(sub, item, finding)
    details.append(note)
    student = student_text(finding, "c", (repro, command) if built_ok else None)
    return Outcome(False, finding.message, "\n".join(details), program, repro, student=student,
                   repro_source=sub.repro_sources[repro.removesuffix(".c")] if built_ok else "")


def _write_repro(sub: Submission, item: str, finding: Finding) -> tuple[str, str, str, bool]:
    """Writes the repro next to the report (repro.c for the fuzz item, repro-<item>.c for the others) and
    checks that it builds against the submission with the official flags: one that counts the heap, else (the
    submission's names clash with the harness's) the two-file one. Its file name, the staff's note, the
    command that builds and runs it, and whether it built."""
    from oracle.hw3.repro import build_command, build_repro, repro_c

    stem = "repro" if item == "fuzz" else f"repro-{item}"
    assert sub.source is not None
    for heap in (True, False):
        found = f"call {finding.step} {finding.call}: {finding.problem} (rule: {finding.rule})"
        source = repro_c(finding.calls, finding.model, found, name=stem, flags=sub.flags, heap=heap)
        binary, compiler = build_repro(source, sub.source, sub.workdir / stem, name=stem, flags=sub.flags,
                                       sandbox=sub.sandbox)
        if binary is not None:
            break
    (sub.out_dir / f"{stem}.c").write_text(source)
    sub.repro_sources[stem] = source
    command = build_command(stem, sub.flags, heap)
    if binary is None:
        return f"{stem}.c", f"{stem}.c does not build against the submission (a pagedcheck bug; please report it):\n{compiler}", command, False
    counted = "" if heap else " (without heap counting: the submission's names clash with the repro's)"
    return f"{stem}.c", f"Standalone repro {stem}.c{counted}, next to llm_memory.h and your llm_memory.c: {command}", command, True

def with_probes(outcome: Outcome | None, sub: Submission, *probes: str) -> Outcome:
    """A directed check's outcome (None: the item is its probes alone), then the white-box probes that cover
    what one engine's API calls cannot show. A probe whose set-up met another item's bug, or that crashed or
    hung in a call, checked nothing: noted, and excused only if the item of that bug or call fails (Excuse); one
    that judged its rule and met another item's bug on the way (CheckedPast) is noted and excused the same way,
    but counts as checked. An item that checked nothing of its own rule at all is not run (0 points), naming the item that owns what
    stopped it; a probe this machine cannot run (no address space) leaves its item not applicable. A probe not
    graded for this kind of submission (evidence.py: a Python submission's objects are not edited) earns and
    costs nothing: an item of such probes alone is not applicable, and an item graded on the rest says once, in a
    student's words, what was not graded."""
    if outcome is not None and not outcome.passed:
        return outcome
    notes: list[str] = []
    read = one_excuse(outcome.excuse) if outcome is not None else None  # what its programs read past
    owners: set[str] = set(read.owners) if read is not None else set()
    failure = read.failure if read is not None else None
    unavailable, left_out, absent_holds, unchecked = [], [], True, 0
    for probe in probes:
        result = sub.probes()[probe]
        if not result.passed and result.stopped_in is not None:  # crashed or hung in a call: its item's first

            owner = item_of(TASKS[result.stopped_in]) or ANY_OTHER
            note = f"not checked past {probe}: {result.detail} in {result.stopped_in} (that is item {owner}'s to judge)"
            if not result.elsewhere:  # in the call the probe is about: if that call's item misses it, it is ours
                absent_holds = False
                unchecked += 1
                notes.append(note)
                owners.add(owner)
                failure = failure or Seen(f"{probe}: {result.detail} in {result.stopped_in} [rule: {result.rule}]",
                                          f"White-box probe {probe!r} failed.", elsewhere=False)
                continue
        elif not result.passed:  # its item fails; another item's bug it met as well is that item's too (settlement)
            met = Excuse(frozenset({result.owner or ANY_OTHER}), Seen(f"{probe}: {result.met}",
                                                                    f"White-box probe {probe!r}.")) if result.met else None
            return Outcome(False, f"{probe}: {result.detail} [rule: {result.rule}]", f"White-box probe {probe!r} failed.",
                           excuse=met)
        elif result.not_graded:
            left_out.append(result.not_graded)
            continue
        elif result.unavailable:
            unavailable.append(f"{probe}: {result.detail}")
            continue
        elif not result.checked or result.past:
            owner, note = result.owner or ANY_OTHER, f"{probe}: {result.detail}"
        else:
            continue
        unchecked += not result.past
        notes.append(note)
        owners.add(owner)
        failure = failure or Seen(f"{probe}: {result.detail} [rule: {result.rule}]", f"White-box probe {probe!r}.")
    if outcome is None and left_out and len(unavailable) + len(left_out) == len(probes):
        raise NotApplicable(left_out[0], student=left_out[0])
    if unavailable:  # never graded on the rest as if it had run: a machine's limit is no student's pass
        raise NotApplicable(f"this machine cannot run it: {unavailable[0]}")
    excuse = Excuse(frozenset(owners), failure, absent_holds, sure=absent_holds) if failure is not None else None
    if outcome is None and unchecked + len(unavailable) + len(left_out) == len(probes):
        raise NotRun(f"could not check its rule: {notes[0]}", excuse)
    message = (outcome.message if outcome is not None else "") or (notes[0] if notes else "")
    if left_out:  # graded on the rest: said once, where a student reads a passed item too
        return Outcome(True, f"{message}; {left_out[0]}" if message else left_out[0], excuse=excuse,
                       student=f"Passed what was graded. {left_out[0]}")
    return Outcome(True, message, excuse=excuse)


def one_excuse(excuses: Excuses) -> Excuse | None:
    """What an item's programs read past (the judge's excuses, one a difference) as one excuse naming every owner,
    saying the first: where the probes that follow add their own."""
    listed = (excuses,) if isinstance(excuses, Excuse) else excuses or ()
    return functools.reduce(joined, listed[1:], listed[0]) if listed else None


def built(sub: Submission) -> Callable[[], Adapter]:
    if sub.factory is None:
        if sub.not_loaded:
            raise NotRun(f"the module does not load: {sub.not_loaded}")
        if sub.refused:
            raise NotRun(sub.refused)
        why = f": {sub.build.verdict}" if sub.build is not None else ""
        raise NotRun(f"the submission does not build{why}")
    return sub.factory
