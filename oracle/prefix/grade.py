"""Grade one Python implementation of the prefix family against a rubric (oracle/prefix/rubric.toml).

A submission is `SHAPE:pkg.module[:attr][@POLICY]` (oracle/prefix/__init__.py), a module, a .py file
(`path/kv_cache.py[:attr][@POLICY]`) or a folder (a package, or one holding kv_cache.py) of the lab's shape,
or `engine` (ours). It runs in a sandboxed child process with the shape's adapter (oracle/prefix/remote.py,
the HW3 grader's sandbox and child process); the grader never imports it.
"""

import os
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from oracle.grading.grader import GraderError, rubric_for, run_checks
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric
from oracle.child import PYTHON, LoadFailure
from oracle.hw3.pylocate import locate
from oracle.prefix.checks import CHECKS, DEFAULT_RUBRIC, PrefixSubmission
from oracle.sandbox import DeadlinePassed, Sandbox, SandboxUnavailable
from oracle.site import site_folder


def load(path: Path | str | None = None) -> Rubric:
    """The rubric at `path`, or the shipped default; raises RubricError."""
    return rubric_for(CHECKS, path or DEFAULT_RUBRIC)


def resolve(submission: str) -> str:
    """The spec `SHAPE:pkg.module-or-file.py[:attr][@POLICY]` of a submission as the user names it;
    GraderError when it names nothing gradable."""
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
    if Path(name).is_dir():
        name = _folder_module(Path(name))
    return f"{shape}:{name}{colon}{attr}{at}{policy}"


def _folder_module(folder: Path) -> str:
    """A folder is a package (it holds __init__.py: named by its path, which pylocate reads without running
    it; the grader's own import path never holds a submission's folder, where a file named like a module the
    grader imports later would run in the grader) or holds the lab's kv_cache.py."""
    if (folder / "__init__.py").is_file() and folder.name.isidentifier():
        return str(folder.resolve())
    if (folder / "kv_cache.py").is_file():
        return str(folder / "kv_cache.py")
    raise GraderError(f"{folder}: the prefix family grades a package folder (with __init__.py) or a folder holding "
                      "kv_cache.py, a .py file or a module SHAPE:pkg.module")


def open_submission(submission: str, seed: int | None, box: Sandbox, timeout: float, cleanup: ExitStack,
                    site: Path | None = None) -> PrefixSubmission:
    """Starts the submission's child (with the packages of the site folder `site`, if given). One that does not
    load is graded: every item not run, with why."""
    from oracle.prefix import policy_for, shapes
    from oracle.prefix.remote import RemotePrefix

    spec = resolve(submission)
    shape, _, rest = spec.partition(":")
    name, _, policy_name = rest.partition("@")
    adapter = shapes()[shape]
    try:
        target = locate(name)
    except ValueError as exc:
        raise GraderError(f"{submission}: {exc}") from None
    if not os.access(PYTHON, os.X_OK):
        raise GraderError(f"{PYTHON} is missing: Python submissions run under the system Python")
    remote = RemotePrefix(target, adapter, policy_for(adapter, policy_name), box, timeout, site)
    cleanup.callback(remote.close)
    try:
        remote.load()
    except LoadFailure as failure:
        return PrefixSubmission(spec, None, str(failure), seed)
    return PrefixSubmission(spec, remote, seed=seed)


def grade(
    submission: str,
    rubric: Rubric,
    out_dir: Path,
    *,
    seed: int | None = None,
    timeout: float = 2.0,
    on_item: Callable[[ItemResult], None] | None = None,
    deadline: float | None = None,
    require_sandbox: bool = False,
    site: Path | str | None = None,
    **_: object,
) -> GradeReport:
    """Runs every rubric item against the submission, served by its child in one Sandbox for the run, with the
    packages of the site folder `site` (oracle/site.py), if given; raises GraderError when it cannot start."""
    start = time.perf_counter()
    if site is not None:
        try:
            site = site_folder(site)
        except ValueError as exc:
            raise GraderError(f"--site {exc}") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        box = Sandbox(require_full=require_sandbox, deadline=deadline)
    except SandboxUnavailable as exc:
        raise GraderError(str(exc)) from None
    with box, ExitStack() as cleanup:
        sub: PrefixSubmission | None = None
        try:
            sub = open_submission(submission, seed, box, timeout, cleanup, site)
        except DeadlinePassed:
            pass
        items = run_checks(CHECKS, rubric, sub or PrefixSubmission(submission, None, "the time limit ran out"),
                           on_item, deadline)
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
        isolation=box.description,
        evidence=sub.evidence if sub is not None else {},
    )
