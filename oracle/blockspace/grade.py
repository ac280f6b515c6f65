"""Grade one blockspace submission against a rubric (rubric.toml): each rule's scenario programs
(programs.py), then the state machine against the model (fuzz).

A submission is `engine` (ours), a module `pkg.module[:Class]`, a .py file `path/block_manager.py[:Class]` or
a folder holding block_manager.py; the class defaults to BlockSpaceManager. It runs in a sandboxed child
(remote.py); the grader never imports it. An item whose program meets another rule's difference first stops
there and passes, excused: that bug costs the other rule's item (oracle/grading/grader.py, Excuse).
"""

import os
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from oracle.blockspace.programs import BY_ITEM, load as load_program, replay
from oracle.blockspace.rules import RULES
from oracle.child import PYTHON, LoadFailure
from oracle.grading.grader import FOUND_ELSEWHERE, Check, Excuse, GraderError, Incomplete, NotRun, Outcome, rubric_for, run_checks
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric, at_least, positive
from oracle.sandbox import DeadlinePassed, Sandbox, SandboxUnavailable

DEFAULT_RUBRIC = Path(__file__).with_name("rubric.toml")


@dataclass
class Submission:
    spec: str
    factory: Callable[[], Any] | None  # None: it did not load
    not_loaded: str = ""
    seed: int | None = None


def _loaded(sub: Submission) -> Callable[[], Any]:
    if sub.factory is None:
        raise NotRun(f"the submission did not load: {sub.not_loaded}")
    return sub.factory


def directed(item: str) -> Check:
    def run(sub: Submission, options: Mapping[str, Any]) -> Outcome:
        factory, notes = _loaded(sub), []
        for name in BY_ITEM[item]:
            calls: list[str] = []
            found = replay(load_program(name), factory(), calls)
            details = f"The calls of the program {name} (oracle/blockspace/programs/{name}.txt):\n" + "\n".join(calls)
            if found is not None and found.rule == item:
                return Outcome(False, found.message, details)
            if found is not None:
                return Outcome(True, f"not checked past {found.where} (item {found.rule}'s rule)",
                               excuse=Excuse(frozenset({found.rule}), Outcome(False, found.message + FOUND_ELSEWHERE, details)))
        return Outcome(True, "; ".join(notes))

    return Check(item, RULES[item], run)


def check_fuzz(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    """The state machine against the model: a fixed seed and count budgets (same verdict on any machine)."""
    from oracle.blockspace import FAMILY
    from oracle.runner import fuzz

    factory = _loaded(sub)
    seed = sub.seed if sub.seed is not None else options["seed"]
    report = fuzz(FAMILY, sub.spec, factory, examples=options["examples"], steps=options["steps"], seed=seed,
                  shrink_replays=options["shrink_replays"], seconds=options["seconds"])
    ran = f"{report.stats.examples} of {options['examples']} programs, {report.stats.steps} calls, seed {seed}"
    if report.cut_short == "generate-seconds":
        raise Incomplete(f"stopped at the {options['seconds']:g} s time limit after {ran}, no divergence so far")
    if report.passed:
        return Outcome(True)
    rule = getattr(report.failure, "rule", None)
    return Outcome(False, f"fuzz ({ran}): {report.divergence}" + (f" [rule: {rule}]" if rule else ""), "",
                   "\n".join(report.program))


CHECKS = {item: directed(item) for item in BY_ITEM}
CHECKS["fuzz"] = Check("fuzz", RULES["fuzz"], check_fuzz,
                       {"seed": 1, "examples": 150, "steps": 30, "shrink_replays": 2000, "seconds": 300.0},
                       {"examples": at_least(1), "steps": at_least(1), "shrink_replays": at_least(0), "seconds": positive})


def load(path: Path | str | None = None) -> Rubric:
    return rubric_for(CHECKS, path or DEFAULT_RUBRIC)


def resolve(submission: str) -> str:
    """The `pkg.module[:Class]` or `file.py[:Class]` a submission names; GraderError when it names nothing."""
    if submission == "engine":
        return "engine.blockspace"
    name, colon, attr = submission.partition(":")
    if Path(name).is_dir():
        if not (Path(name) / "block_manager.py").is_file():
            raise GraderError(f"{name}: the blockspace family grades a folder holding block_manager.py, a .py file "
                              "or a module pkg.module[:Class]")
        name = str(Path(name) / "block_manager.py")
    return f"{name}{colon}{attr}"


def grade(submission: str, rubric: Rubric, out_dir: Path, *, seed: int | None = None, timeout: float = 2.0,
          on_item: Callable[[ItemResult], None] | None = None, deadline: float | None = None,
          require_sandbox: bool = False, **_: object) -> GradeReport:
    from oracle.blockspace.remote import RemoteManager
    from oracle.hw3.pylocate import locate

    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        target = locate(resolve(submission))
        box = Sandbox(require_full=require_sandbox, deadline=deadline)
    except (ValueError, SandboxUnavailable) as exc:
        raise GraderError(f"{submission}: {exc}") from None
    if not os.access(PYTHON, os.X_OK):
        raise GraderError(f"{PYTHON} is missing: Python submissions run under the system Python")
    with box, ExitStack() as cleanup:
        sub = Submission(submission, None, "the time limit ran out", seed)
        try:
            remote = RemoteManager(target, box, timeout)
            cleanup.callback(remote.close)
            remote.load()
            sub.factory = remote
        except LoadFailure as failure:
            sub.not_loaded = str(failure)
        except DeadlinePassed:
            pass
        items = run_checks(CHECKS, rubric, sub, on_item, deadline)
    fuzz_seed = next((item.options["seed"] for item in rubric.items if item.id == "fuzz"), 0)
    return GradeReport(family="blockspace", submission=submission, kind="python", rubric_title=rubric.title,
                       rubric_source=rubric.source, seed=fuzz_seed if seed is None else seed, items=items,
                       seconds=time.perf_counter() - start, isolation=box.description)
