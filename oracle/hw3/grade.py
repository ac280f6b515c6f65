"""Grade one HW3 submission: a C llm_memory.c (a file, or a directory holding one) or a Python module
(`pkg.module[:attr]` or a .py file, run in a child process), against a rubric; C gets every check, Python
the ones that apply to it.

    report = grade("alice/llm_memory.c", load(), out_dir=Path("alice-report"))
"""

import dataclasses
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from oracle.grading.grader import GraderError, rubric_for, run_checks
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric, RubricError
from oracle.hw3 import programs
from oracle.hw3.adapters import BUILTIN_ENGINE
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build, submission_source
from oracle.native.upload import Refused, only_file_below
from oracle.hw3.c.stray import Stray, Watch
from oracle.hw3.checks import CHECKS, Submission
from oracle.child import PYTHON, LoadFailure
from oracle.pylocate import locate
from oracle.hw3.pyremote import served_engine
from oracle.program import ProgramError
from oracle.run_cpu import Budget
from oracle.sandbox import DeadlinePassed, Sandbox, SandboxUnavailable

DEFAULT_RUBRIC = Path(__file__).with_name("rubric.toml")
PYTHON_NAME = "llm_memory.py"  # what a folder uploaded for a Python course holds (grade --lang python)


def load(path: Path | str | None = None) -> Rubric:
    """The rubric at `path`, or the shipped default, each directed item's programs read (programs.py: a name is
    found first in the `programs/` folder beside the rubric); raises RubricError, naming a bad program's file
    and line."""
    rubric = rubric_for(CHECKS, path or DEFAULT_RUBRIC)
    folder = Path(rubric.source).parent / "programs"
    items = []
    for item in rubric.items:
        if "programs" in item.options:
            try:
                read = tuple(programs.load(name, (folder,)) for name in item.options["programs"])
            except ProgramError as exc:
                raise RubricError(f"rubric {rubric.source}: item {item.id!r}: {exc}") from None
            item = dataclasses.replace(item, options={**item.options, "programs": read})
        items.append(item)
    return dataclasses.replace(rubric, items=tuple(items))


def is_c(submission: str) -> bool:
    """A path (a .c file, a directory, anything with a slash but a .py file) rather than Python."""
    if submission.endswith(".py"):
        return False
    return submission.endswith(".c") or "/" in submission or Path(submission).is_dir()


def grade(
    submission: str,
    rubric: Rubric,
    out_dir: Path,
    *,
    seed: int | None = None,
    timeout: float = 2.0,
    build_cache: Path | None = None,
    on_item: Callable[[ItemResult], None] | None = None,
    budget: Budget | None = None,
    require_sandbox: bool = False,
    lang: str | None = None,
) -> GradeReport:
    """Runs every rubric item against the submission; repro files go to out_dir. `seed` overrides the fuzz
    item's; `timeout` bounds each call of the submission; items not started before `budget` (the
    grade's time limit, oracle/run_cpu.py) has passed are not run. All submission code (gcc included) runs in one
    Sandbox for the run, closed (every process it started killed) before the report is made. Raises GraderError when
    grading cannot start, e.g. `require_sandbox` without bubblewrap. `lang` "python" grades a directory as a
    Python upload (its llm_memory.py); None or "c" tells a path from a module as is_c does."""
    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    fuzz_seed = next((item.options["seed"] for item in rubric.items if item.id == "fuzz"), 0)
    try:
        box = Sandbox(require_full=require_sandbox, budget=budget)
    except SandboxUnavailable as exc:
        raise GraderError(str(exc)) from None
    with box, tempfile.TemporaryDirectory(prefix="pagedcheck-grade-") as scratch, ExitStack() as cleanup:
        sub: Submission | None = None
        try:
            if lang == "python" and Path(submission).is_dir():
                sub = _python_upload(submission, out_dir, Path(scratch), timeout, box, cleanup)
            elif submission == "engine" or not is_c(submission):
                sub = _python(submission, out_dir, Path(scratch), timeout, box, cleanup)
            else:
                sub = _submission(submission, out_dir, Path(scratch), build_cache, timeout, box)
            sub.seed, sub.budget = seed, budget
        except DeadlinePassed:  # the time limit ran out while building: every item is not run, with why
            pass
        items = run_checks(CHECKS, rubric, sub, on_item, budget)
    return GradeReport(
        family="hw3",
        submission=submission,
        kind=sub.kind if sub is not None else "c" if is_c(submission) and submission != "engine" and lang != "python"
        else "python",
        rubric_title=rubric.title,
        rubric_source=rubric.source,
        seed=fuzz_seed if seed is None else seed,
        items=items,
        seconds=time.perf_counter() - start,
        isolation=box.description,
        evidence=sub.findings if sub is not None else [],
    )


def _python(path: str, out_dir: Path, scratch: Path, timeout: float, box: Sandbox, cleanup: ExitStack) -> Submission:
    """A Python submission, found by its files and loaded in its child process (never in this one). One that
    does not load (a SyntaxError, an ImportError, a missing call) is graded: every item is not run, with why."""
    try:
        target = locate(BUILTIN_ENGINE if path == "engine" else path)
    except ValueError as exc:
        raise GraderError(f"{path}: not a C submission (.c file or directory), and {exc}") from None
    if not os.access(PYTHON, os.X_OK):
        raise GraderError(f"{PYTHON} is missing: Python submissions run under the system Python")
    remote = served_engine(target, box, timeout=timeout)
    cleanup.callback(remote.facts["pools"].close)
    cleanup.callback(remote.close)
    try:
        remote.load()
    except LoadFailure as failure:
        return Submission(path, "python", None, out_dir, scratch, timeout=timeout, sandbox=box, not_loaded=str(failure))
    return Submission(path, "python", remote, out_dir, scratch, timeout=timeout, sandbox=box)


def _python_upload(folder: str, out_dir: Path, scratch: Path, timeout: float, box: Sandbox,
                   cleanup: ExitStack) -> Submission:
    """A folder uploaded for a Python course: its llm_memory.py (at the top, else the only one in its folders).
    None there, or a symbolic link, is the submission's failure: every item that applies is not run, with why."""
    source = Path(folder) / PYTHON_NAME
    try:
        if not source.exists() and not source.is_symlink():
            source = only_file_below(Path(folder), PYTHON_NAME)
        if source.is_symlink() or not source.is_file():
            raise Refused(f"{PYTHON_NAME} is a symbolic link or not a regular file: submit the file itself")
    except Refused as exc:
        return Submission(folder, "python", None, out_dir, scratch, timeout=timeout, sandbox=box, refused=str(exc))
    return _python(str(source), out_dir, scratch, timeout, box, cleanup)


def _submission(path: str, out_dir: Path, scratch: Path, build_cache: Path | None, timeout: float,
                box: Sandbox) -> Submission:
    if shutil.which("gcc") is None:
        raise GraderError("gcc is not on PATH: C submissions cannot be built")
    try:
        source = submission_source(path)
        result = build(source, build_cache, box)
    except Refused as exc:  # a symbolic link, say: the submission's fault, graded 0 with the reason
        return Submission(path, "c", None, out_dir, scratch, timeout=timeout, sandbox=box, refused=str(exc))
    except ValueError as exc:
        raise GraderError(str(exc)) from None
    except RuntimeError as exc:  # our own driver does not build, or the build cache is not ours
        raise GraderError(str(exc)) from None
    # Only warnings (the compile without -Werror succeeds): "compiles" fails, the rest is graded on that build.
    # Every adapter notes the stray accesses the grader counts in its calls, for memory_safety (stray_charge.py).
    driver, strays = result.graded_driver, list[Stray]()
    factory = (lambda: CAdapter(driver, timeout=timeout, sandbox=box, watch=Watch(strays))) if driver is not None else None
    return Submission(path, "c", factory, out_dir, scratch, build=result, source=source, timeout=timeout, sandbox=box,
                      strays=strays)
