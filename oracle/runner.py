"""Run a family's state machine under Hypothesis and report what happened, for any family."""

import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

from hypothesis import HealthCheck, Phase, seed as use_seed, settings
from hypothesis.errors import FlakyFailure
from hypothesis.stateful import run_state_machine_as_test

from oracle.family import AdapterFactory, Family

_PROGRAM_LINE = re.compile(r"^(\w+(, \w+)* = )?state\b")  # a step as Hypothesis prints it
from oracle.stats import RunStats


@dataclass
class FuzzReport:
    impl: str
    seed: int
    seconds: float
    stats: RunStats
    divergence: str | None = None  # one line: what differed first, and after which call
    program: list[str] = field(default_factory=list)  # the minimal failing program, runnable with python
    failure: Exception | None = None  # the family's exception from the minimal program (calls, model, ...)

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
        tty = self.stream.isatty()
        self.stream.write(f"\r{line}" if tty else f"{line}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.stream.isatty() and self.last != self.start:
            self.stream.write("\n")


def fuzz(
    family: Family,
    impl: str,
    adapter_factory: AdapterFactory,
    *,
    examples: int = 200,
    steps: int = 50,
    seed: int = 0,
    progress: Callable[[RunStats], None] | None = None,
) -> FuzzReport:
    """Run `examples` programs of up to `steps` calls each; the same seed gives the same run."""
    stats = RunStats()
    machine = family.machine_for(adapter_factory, stats)

    def new_machine():
        if progress:
            progress(stats)
        return machine()

    run_settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no explain phase: programs stay plain
    )
    start = time.perf_counter()
    divergence, notes, error = None, [], None
    try:
        run_state_machine_as_test(use_seed(seed)(new_machine), settings=run_settings)
    except AssertionError as failure:  # Divergence, or an assertion inside a Python implementation
        divergence, notes, error = str(failure).splitlines()[0], getattr(failure, "__notes__", []), failure
    except FlakyFailure as failure:
        divergence = f"flaky: the failure did not happen again on replay ({failure.exceptions[0]})"
    steps = [note for note in notes if _PROGRAM_LINE.match(note)]
    if divergence and error is not None and steps:
        steps, error = _without_idle_steps(family.machine_for(adapter_factory, RunStats()), steps, divergence, error)
    report = FuzzReport(impl, seed, time.perf_counter() - start, stats, divergence, failure=error)
    if divergence:
        report.program = family.repro_preamble(impl) + steps
    return report


def _without_idle_steps(
    machine: type, steps: list[str], divergence: str, failure: AssertionError
) -> tuple[list[str], AssertionError]:
    """Deletes every step the failure does not need. Hypothesis stops shrinking after 500 successful
    shrinks, so a long program can keep calls that change nothing; a step goes, with the steps that use
    what it returned, when the program without them still ends in the same divergence. Steps are replayed
    as printed, with the machine class under the name the first step (`state = Name()`) uses."""
    name = re.match(r"state = (\w+)\(\)$", steps[0])
    index = 1
    while name and index < len(steps) - 1:  # the first step makes the machine, the last tears it down
        candidate = _without_step(steps, index)
        again = _replay({name[1]: machine}, candidate)
        if again is not None and str(again).splitlines()[0] == divergence:
            steps, failure = candidate, again
        else:
            index += 1
    return steps, failure


def _without_step(steps: list[str], index: int) -> list[str]:
    """The program without steps[index] and every later step that uses a name it (or such a step) defines."""
    dropped, names = {index}, set()
    for at in range(index, len(steps)):
        uses = set(re.findall(r"\b\w+\b", steps[at].split(" = ", 1)[-1]))
        if at == index or uses & names:
            dropped.add(at)
            head, sep, _ = steps[at].partition(" = ")
            names |= {n.strip() for n in head.split(",")} if sep else set()
    return [step for at, step in enumerate(steps) if at not in dropped]


def _replay(namespace: dict, steps: list[str]) -> AssertionError | None:
    """Runs a printed program; the AssertionError it ends in, if any. A program that stops early is torn
    down here, so a C driver does not outlive it."""
    try:
        exec("\n".join(steps), namespace)
        return None
    except Exception as failure:  # a Divergence; or a NameError: a step needed one that was deleted
        try:
            namespace["state"].teardown()
        except Exception:
            pass
        return failure if isinstance(failure, AssertionError) else None
