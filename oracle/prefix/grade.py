"""Grade one Python implementation of the prefix family against a rubric (oracle/prefix/rubric.toml).

A submission is `SHAPE:pkg.module[:attr][@POLICY]` (oracle/prefix/__init__.py), a module, a .py file
(`path/kv_cache.py[:attr][@POLICY]`) or a folder (a package, or one holding kv_cache.py) of the lab's shape,
or `engine` (ours). Isolation: none yet. The
submission is imported into the grader's own process (report.isolation says so); `--require-sandbox`
refuses to grade it.
"""

import importlib.util
import sys
import time
from pathlib import Path
from typing import Callable

from oracle.grading.grader import GraderError, run_checks
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric, load_rubric
from oracle.prefix.checks import CHECKS, DEFAULT_RUBRIC, PrefixSubmission

ISOLATION = "none: the prefix family imports the submission into the grader's own process (no sandbox)"


def load(path: Path | str | None = None) -> Rubric:
    """The rubric at `path`, or the shipped default; raises RubricError."""
    return load_rubric(path or DEFAULT_RUBRIC, {check.id: check.options for check in CHECKS.values()},
                       {check.id: check.limits for check in CHECKS.values()})


def resolve(submission: str) -> str:
    """The adapter spec `SHAPE:pkg.module[:attr][@POLICY]` of a submission as the user names it; a .py
    file's folder goes first on sys.path. GraderError when it names nothing gradable."""
    from oracle.prefix import BUILTIN_ENGINE, shapes
    from oracle.prefix.policy import POLICIES

    if submission == "engine":
        return BUILTIN_ENGINE
    spec, at, policy = submission.partition("@")
    if at and policy not in (*POLICIES, "any"):
        raise GraderError(f"{submission}: unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}, any")
    shape, sep, rest = spec.partition(":")
    if not sep or shape not in shapes():
        shape, rest = "lab", spec  # no shape named: the lab's
    name, colon, attr = rest.partition(":")
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_file():
            raise GraderError(f"{name}: no such file")
        sys.path.insert(0, str(path.resolve().parent))
        name = path.stem
    elif Path(name).is_dir():
        name = _folder_module(Path(name))
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise GraderError(f"{submission}: cannot find module {name!r}")
    return f"{shape}:{name}{colon}{attr}{at}{policy}"


def _folder_module(folder: Path) -> str:
    """A folder is a package (it holds __init__.py) or holds the lab's kv_cache.py; its parent, or itself,
    goes first on sys.path."""
    if (folder / "__init__.py").is_file() and folder.name.isidentifier():
        sys.path.insert(0, str(folder.resolve().parent))
        return folder.name
    if (folder / "kv_cache.py").is_file():
        sys.path.insert(0, str(folder.resolve()))
        return "kv_cache"
    raise GraderError(f"{folder}: the prefix family grades a package folder (with __init__.py) or a folder holding "
                      "kv_cache.py, a .py file or a module SHAPE:pkg.module")


def open_submission(submission: str, seed: int | None) -> PrefixSubmission:
    """Loads the submission (in this process). One that does not load is graded: every item not run, with why."""
    from oracle.prefix import load_adapter

    spec = resolve(submission)
    try:
        factory = load_adapter(spec)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # its import raised, exited, or it lacks the shape's calls: its fault
        reason = str(exc) if isinstance(exc, ValueError) else f"importing it raised {type(exc).__name__}: {exc}"
        return PrefixSubmission(spec, None, reason, seed)
    return PrefixSubmission(spec, factory, seed=seed)


def grade(
    submission: str,
    rubric: Rubric,
    out_dir: Path,
    *,
    seed: int | None = None,
    timeout: float = 2.0,  # not enforced: the submission runs in this process
    on_item: Callable[[ItemResult], None] | None = None,
    deadline: float | None = None,
    require_sandbox: bool = False,
    **_: object,
) -> GradeReport:
    """Runs every rubric item against the submission; raises GraderError when it cannot start."""
    if require_sandbox:
        raise GraderError("--require-sandbox: the prefix family runs a submission inside the grader's process, "
                          "without a sandbox")
    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    sub = open_submission(submission, seed)
    items = run_checks(CHECKS, rubric, sub, on_item, deadline)
    fuzz_seed = next((item.options["seed"] for item in rubric.items if item.id == "fuzz"), 0)
    return GradeReport(
        family="prefix",
        submission=submission,
        kind="python",
        rubric_title=rubric.title,
        rubric_source=rubric.source,
        seed=fuzz_seed if seed is None else seed,
        items=items,
        seconds=time.perf_counter() - start,
        isolation=ISOLATION,
    )
