"""What a family's grader of Python submissions can take from the core instead of writing it again: the
submission as the checks see it, an item judged by call programs, the stateful-fuzzing item, and one grade (a
sandbox, the submission served by a child process, the rubric's items, the report). A family supplies its checks
and its child; a family whose adapter the child serves whole supplies only data (`ServedGrader`)."""

import os
import time
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Generator, Mapping

from hypothesis.errors import HypothesisDeprecationWarning
from hypothesis.reporting import with_reporter

from oracle.child import PYTHON, LoadFailure
from oracle.finding import Finding
from oracle.grading.grader import Check, Excuse, GraderError, Incomplete, NotRun, Outcome, rubric_for, run_checks
from oracle.grading.judge import Judge, Replayed, directed
from oracle.grading.settlement import Seen
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric, at_least, positive
from oracle.served import Served
from oracle.program import Program
from oracle.run_cpu import HUNG_WALL, Budget
from oracle.sandbox import DeadlinePassed, Sandbox, SandboxUnavailable

FUZZ_OPTIONS = {"seed": 1, "examples": 150, "steps": 30, "shrink_replays": 2000, "seconds": 300.0}
FUZZ_LIMITS = {"examples": at_least(1), "steps": at_least(1), "shrink_replays": at_least(0), "seconds": positive}


@dataclass
class Submission:
    spec: str  # what the family's load_adapter takes
    factory: Callable[[], Any] | None = None  # adapters over the served submission; None: it did not load
    not_loaded: str = "the time limit ran out"
    seed: int | None = None  # the fuzz seed a grade was asked for (None: the rubric's)
    evidence: dict[str, Any] = field(default_factory=dict)  # item id -> its failing call pictured (oracle/page.py)

    def adapters(self) -> Callable[[], Any]:
        if self.factory is None:
            raise NotRun(f"the submission did not load: {self.not_loaded}")
        return self.factory


def scenario_check(item: str, rule: str, programs: list[Program],
                   replay: Callable[[Program, Any, list[str], str], Finding | None], judged: set[str],
                   items: frozenset[str] | None = None) -> Check:
    """An item judged by call programs, each replayed on a fresh adapter (`replay` gives the difference that
    stopped it as a Finding, words each call into its list, and reads past another rule's difference where the
    model can follow the implementation: oracle/checked.py), by the one judge (oracle/grading/judge.py): a call
    of `judged` exercises the item's rule, and the model's following is no checking (what the program did after a
    refusal is not what it was written to check), so another rule's difference, read past or stopped at, is a
    stopped excuse either way. The first program with a difference decides; `items`: the family's items (None:
    every rule is one's)."""

    def replays(item: str, sub: Submission) -> Generator[Replayed, None, None]:
        factory = sub.adapters()
        for program in programs:
            calls: list[str] = []
            found = replay(program, factory(), calls, item)
            details = f"The calls of the program {program.name}:\n" + "\n".join(calls)
            yield Replayed(program, found, lambda _, details=details: details)

    return directed(item, rule, Judge(lambda _, step: step.op in judged, items), replays)


def fuzz_check(family: str, rule: str, rule_of: Callable[[BaseException], str | None] | None = None,
               sure: Callable[[BaseException], bool] = lambda failure: True,
               also: Callable[[BaseException], frozenset[str]] = lambda failure: frozenset()) -> Check:
    """The family's state machine against its model, a fixed seed and count budgets (the same verdict on any
    machine; `seconds` is only a safety net). The rule a failure breaks is `rule_of(failure)`, by default its
    `rule` attribute, if any: the item of that rule fails too where it passed (found by the fuzz's programs),
    when the family is `sure` the failure is that rule's (not a difference either of two rules may make), and
    unless the items of the rules `also` names (whose bug may make it too) failed, worth as much."""

    def run(sub: Submission, options: Mapping[str, Any]) -> Outcome:
        from oracle.family import family_named
        from oracle.page import fuzz_scene
        from oracle.runner import fuzz

        factory, seed = sub.adapters(), sub.seed if sub.seed is not None else options["seed"]
        with with_reporter(lambda _: None), warnings.catch_warnings():
            # Hypothesis prints nothing into the report; the shrinker replays outside Hypothesis, where `assume` warns
            warnings.simplefilter("ignore", HypothesisDeprecationWarning)
            report = fuzz(family_named(family), sub.spec, factory, examples=options["examples"],
                          steps=options["steps"], seed=seed, shrink_replays=options["shrink_replays"],
                          seconds=options["seconds"])
        ran = f"{report.stats.examples} of {options['examples']} programs, {report.stats.steps} calls, seed {seed}"
        if report.cut_short == "generate-seconds":
            raise Incomplete(f"stopped at the {options['seconds']:g} s time limit (CPU seconds; "
                             f"{HUNG_WALL * options['seconds']:g} s of wall clock) after {ran}, no divergence so far")
        if report.passed:
            return Outcome(True)
        seen = report.failure or report.unreplayed  # a flaky failure was seen once: its rule is known
        broken = None if seen is None else rule_of(seen) if rule_of else getattr(seen, "rule", None)
        note = " (shrinking stopped at its budget: the program may not be minimal)" if report.cut_short else ""
        named = family_named(family)
        sub.evidence["fuzz"] = fuzz_scene(named, factory, report.failing)  # while it is served
        # the failing program as the calls the implementation received, where the family words them
        details = "\n".join(named.describe_failure(report.failure, sub.spec)[:-2]) if named.describe_failure else ""
        message = f"fuzz ({ran}): {report.divergence}" + (f" [rule: {broken}]" if broken else "") + note
        # the item of the rule it breaks fails too, once, where its own programs missed it (grading/settlement.py)
        charges = Excuse(frozenset({broken}), Seen(message, details), unless=also(seen)) \
            if broken and broken != "fuzz" and seen is not None and sure(seen) else None
        return Outcome(False, message, details, "\n".join(report.program), excuse=charges)

    return Check("fuzz", rule, run, FUZZ_OPTIONS, FUZZ_LIMITS, catch_all=True)


def grade(family: str, checks: Mapping[str, Check], submission: str, target: Any, serve: Callable[..., Any],
          rubric: Rubric, out_dir: Path, *, seed: int | None = None, timeout: float = 2.0,
          on_item: Callable[[ItemResult], None] | None = None, budget: Budget | None = None,
          require_sandbox: bool = False, spec: str | None = None) -> GradeReport:
    """Every rubric item against `target` (oracle/child.py's PythonTarget), served by `serve(target, sandbox,
    timeout)`: an adapter factory with load() (LoadFailure) and close(). `spec`: what the family's load_adapter
    takes for it, where that is not the submission as named. GraderError when it cannot start."""
    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(PYTHON, os.X_OK):
        raise GraderError(f"{PYTHON} is missing: Python submissions run under the system Python")
    try:
        box = Sandbox(require_full=require_sandbox, budget=budget)
    except SandboxUnavailable as exc:
        raise GraderError(str(exc)) from None
    with box, ExitStack() as cleanup:
        sub = Submission(spec or submission, seed=seed)
        try:
            served = serve(target, box, timeout)
            cleanup.callback(served.close)
            served.load()
            sub.factory = served
        except LoadFailure as failure:
            sub.not_loaded = str(failure)
        except DeadlinePassed:
            pass
        items = run_checks(checks, rubric, sub, on_item, budget)
    fuzz_seed = next((item.options["seed"] for item in rubric.items if item.id == "fuzz"), 0)
    return GradeReport(family=family, submission=submission, kind="python", rubric_title=rubric.title,
                       rubric_source=rubric.source, seed=fuzz_seed if seed is None else seed, items=items,
                       seconds=time.perf_counter() - start, isolation=box.description, evidence=sub.evidence)


@dataclass(frozen=True)
class ServedGrader:
    """A family's grader of Python submissions whose adapter the child serves whole (oracle/served.py), as data:
    each item's rule, the programs that judge it and the operations that exercise it (`judged`: a program stopped
    before any checked nothing of the item's rule), the replay, the fuzz item (its rule is `rules["fuzz"]`), the
    server (the adapter's file), the adapter's failure, the method that starts it afresh and the shape of each
    method's answer (checked where it enters, oracle/served.py), and what a
    submission names: `engine` (ours), a folder (its `module_file`), or `pkg.module[:attr]` / `file.py[:attr]`,
    found by `locate` without running it."""

    family: str
    rules: Mapping[str, str]  # rubric item -> its rule, in the family's words
    programs: Mapping[str, tuple[Program, ...]]  # item -> the programs that judge it (every item but fuzz)
    judged: Mapping[str, set[str]]  # item -> the operations of its rule
    replay: Callable[[Program, Any, list[str], str], Finding | None]  # (.., the rule judged)
    server: Path
    failure: type[Exception]
    renew: str
    replies: Mapping[str, Any]  # method -> the shape of its answer (oracle/reply_shape.py); undeclared: null
    default_rubric: Path
    engine: str  # the module `engine` names
    module_file: str  # the file a folder's submission is
    locate: Callable[[str], Any]  # spec -> oracle/child.py's PythonTarget; ValueError with a one-line reason
    also: Callable[[BaseException], frozenset[str]] = lambda failure: frozenset()  # a fuzz failure -> the other
    # rules whose bug may make it too (fuzz_check)

    @cached_property
    def checks(self) -> dict[str, Check]:
        return {item: scenario_check(item, self.rules[item], list(programs), self.replay, self.judged[item],
                                     frozenset(self.programs))
                for item, programs in self.programs.items()} | {
            "fuzz": fuzz_check(self.family, self.rules["fuzz"], also=self.also)}

    def load(self, path: Path | str | None = None) -> Rubric:
        """The rubric at `path`, or the shipped default; RubricError."""
        return rubric_for(self.checks, path or self.default_rubric)

    def resolve(self, submission: str) -> str:
        """The `pkg.module[:attr]` or `file.py[:attr]` a submission names (a folder: its module file)."""
        name, colon, attr = (self.engine if submission == "engine" else submission).partition(":")
        return f"{Path(name) / self.module_file if Path(name).is_dir() else name}{colon}{attr}"

    def grade(self, submission: str, rubric: Rubric, out_dir: Path, **options: Any) -> GradeReport:
        """Every item of `rubric` against the submission, in the sandbox; GraderError when it cannot start."""
        try:
            target = self.locate(self.resolve(submission))
        except ValueError as exc:
            raise GraderError(f"{submission}: {exc}") from None

        def serve(target: Any, sandbox: Sandbox, timeout: float) -> Served:
            return Served(target, sandbox, server=self.server, failure=self.failure, renew=self.renew,
                          replies=self.replies, timeout=timeout)

        return grade(self.family, self.checks, submission, target, serve, rubric, out_dir, **options)
