"""Run a family's state machine under Hypothesis and report what happened, for any family."""

import copy
import re
from contextlib import nullcontext
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from hypothesis import HealthCheck, Phase, seed as use_seed, settings
from hypothesis.errors import Flaky, FlakyFailure, Unsatisfiable, UnsatisfiedAssumption
from hypothesis.stateful import run_state_machine_as_test

from oracle.campaign import campaign_machine, database
from oracle.determinism import fixed_constants
from oracle.family import AdapterFactory, Family
from oracle.one_cpu import on_one_cpu
from oracle.program import Program
from oracle.run_cpu import SafetyNet
from oracle.shrink import Budget, Shrinker, parse, render
from oracle.stats import RunStats

_PROGRAM_LINE = re.compile(r"^(\w+(, \w+)* = )?state\b")  # a step as Hypothesis prints it
SHRINK_REPLAYS = 2000  # replays the shrinker may spend; the broken fixtures need a few hundred at most


@dataclass
class FuzzReport:
    impl: str
    seed: int
    seconds: float
    stats: RunStats
    divergence: str | None = None  # one line: what differed first, and after which call
    program: list[str] = field(default_factory=list)  # the minimal failing program, runnable with python
    failing: Program | None = None  # the same as data (None: a machine that is not a table machine's)
    failure: BaseException | None = None  # the family's exception from the minimal program (calls, model, ...)
    # None, or which limit stopped the run early: "generate-seconds" (the time limit, before `examples`
    # programs ran), "shrink-replays" (the shrink budget) or "shrink-seconds" (the time limit, shrinking)
    cut_short: str | None = None
    unreplayed: BaseException | None = None  # a flaky run's failure, seen once but not again on replay

    @property
    def passed(self) -> bool:
        return self.divergence is None

    def as_dict(self) -> dict:
        return {
            "impl": self.impl,
            "passed": self.passed,
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.stats.steps / self.seconds, 1) if self.seconds else None,
            **self.stats.as_dict(),
            "cut_short": self.cut_short,
            "divergence": self.divergence,
            "program": "\n".join(self.program) if self.program else None,
        }


class Progress:
    """A status line on stderr, at most once a second; rewritten in place on a terminal."""

    def __init__(self, total: int, stream: TextIO = sys.stderr):
        self.total, self.stream = total, stream
        self.start = self.last = time.monotonic()

    def __call__(self, stats: RunStats) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        line = f"fuzz: {min(stats.examples, self.total)}/{self.total} examples, {stats.steps} steps, {now - self.start:.0f} s"
        if stats.shrink_replays:
            line += f", shrinking: {stats.shrink_replays} replays"
        tty = self.stream.isatty()
        self.stream.write(f"\r{line}" if tty else f"{line}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.stream.isatty() and self.last != self.start:
            self.stream.write("\n")


@on_one_cpu()  # the implementation and the model take turns (oracle/one_cpu.py)
def fuzz(
    family: Family,
    impl: str,
    adapter_factory: AdapterFactory,
    *,
    examples: int = 200,
    steps: int = 50,
    seed: int = 0,
    progress: Callable[[RunStats], None] | None = None,
    shrink_replays: int = SHRINK_REPLAYS,
    seconds: float | None = None,
    replay: Path | None = None,
) -> FuzzReport:
    """Run `examples` programs of up to `steps` calls each, stopping at the first failure, then shrink it in
    at most `shrink_replays` replays. The same seed gives the same run on any machine: every budget is a
    count. `seconds` is only a safety net, in CPU seconds of the grader's process tree (oracle/run_cpu.py
    SafetyNet: a busy machine never reaches it); a run that reaches it says so (`cut_short`).
    `replay`: a campaign's folder (oracle/campaign.py): instead of generating, replay the failures its example
    database holds (read-only; `steps` must be the campaign's), then shrink the first that fails as usual."""
    net = None if seconds is None else SafetyNet(seconds)
    try:
        return _fuzz(family, impl, adapter_factory, examples, steps, seed, progress, shrink_replays, net, replay)
    finally:
        if net is not None:
            net.close()


def _fuzz(family: Family, impl: str, adapter_factory: AdapterFactory, examples: int, steps: int, seed: int,
          progress: Callable[[RunStats], None] | None, shrink_replays: int, net: SafetyNet | None,
          replay: Path | None) -> FuzzReport:
    stats = RunStats()
    machine = _watched(family.machine_for(adapter_factory, stats))
    before = [RunStats()]  # the statistics before the latest program: Hypothesis replays a failure once
    stopped: list[str] = []

    def new_machine():
        if progress:
            progress(stats)
        if not machine.failed:  # else this is Hypothesis's replay of the failing program, for printing
            if stats.examples >= examples:  # programs Hypothesis drops as invalid ran too: they count
                stopped.append("examples")
            elif net is not None and net.passed():
                stopped.append("seconds")
            if stopped:
                raise _Stop
        before[0] = copy.deepcopy(stats)
        return machine()

    run_settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],  # we shrink (oracle.shrink); no explain phase: plain programs
    )
    factory = use_seed(seed)(new_machine)
    if replay is not None:  # the campaign's machine, under the key its workers saved failures with
        factory = campaign_machine(machine, family.name)
        run_settings = settings(run_settings, database=database(replay, read_only=True), phases=[Phase.reuse])
    start = time.perf_counter()
    divergence, notes, error, unreplayed = None, [], None, None

    def stopped_report() -> FuzzReport:  # a run ended at its count of programs or its time limit (_Stop)
        return FuzzReport(impl, seed, time.perf_counter() - start, stats,
                          cut_short="generate-seconds" if stopped == ["seconds"] else None)

    try:
        with fixed_constants() if family.fixed_constants else nullcontext():  # one seed, one run anywhere
            run_state_machine_as_test(factory, settings=run_settings)
    except AssertionError as failure:  # Divergence, or an assertion inside a Python implementation
        divergence, notes, error = str(failure).splitlines()[0], getattr(failure, "__notes__", []), failure
    except FlakyFailure as failure:
        divergence = f"flaky: the failure did not happen again on replay ({failure.exceptions[0]})"
        unreplayed = failure.exceptions[0]
    except Flaky as flaky:  # Hypothesis's replay of a program drew another: the implementation answered otherwise
        if stopped:  # or what Hypothesis makes of a run ended mid-way
            return stopped_report()
        divergence = ("flaky: the same calls, made again, were answered otherwise, so the program they make could "
                      f"not be made again ({type(flaky).__name__}): an implementation must answer the same calls the "
                      "same way")
    except Unsatisfiable:  # a campaign's stored examples are no valid program of this machine: none fails here
        if replay is None:
            raise
        return FuzzReport(impl, seed, time.perf_counter() - start, stats)
    except BaseException:
        if not stopped:
            raise
        return stopped_report()  # _Stop itself
    if divergence and replay is None:
        stats = before[0]  # without Hypothesis's replay of the failing program
    program = [note for note in notes if _PROGRAM_LINE.match(note)]
    report = FuzzReport(impl, seed, 0.0, stats, divergence, failure=error, unreplayed=unreplayed)
    # a fresh, unwatched machine for the shrinker (the fuzz's `machine` counts into `stats`)
    shrinking = family.machine_for(adapter_factory, RunStats()) if divergence and error is not None else None
    failing = parse(shrinking, program) if shrinking is not None else None  # None: not a table machine's, printed as is
    if failing is not None and failing.steps:
        budget = Budget(shrink_replays, net.passed if net is not None else None)

        def replayed(count: int) -> None:
            stats.shrink_replays = count
            if progress:
                progress(stats)

        shrunk, report.failure = Shrinker(shrinking, budget, replayed).shrink(failing, error)
        program, report.failing = render(shrinking, shrunk), shrunk
        report.divergence = str(report.failure).splitlines()[0]
        stats.shrink_replays = budget.spent
        report.cut_short = f"shrink-{budget.cut_short}" if budget.cut_short else None
    if divergence:
        report.program = family.repro_preamble(impl) + program
    report.seconds = time.perf_counter() - start
    return report


class _Stop(BaseException):
    """Ends a run at its count of programs or its time limit. Not an Exception, so Hypothesis does not take
    it for a failure."""


def _watched(machine: type) -> type:
    """The machine class, noting (in `failed`) when a program fails: after that, Hypothesis only replays."""

    def teardown(self) -> None:
        failure = sys.exc_info()[1]  # teardown runs in Hypothesis's `finally`, while a failure propagates
        if isinstance(failure, Exception) and not isinstance(failure, UnsatisfiedAssumption):
            watched.failed = True
        machine.teardown(self)

    watched = type(machine.__name__, (machine,), {"teardown": teardown, "failed": False})
    return watched
