"""Grade one Python implementation of the prefix family against a rubric (oracle/prefix/rubric.toml).

A submission is `SHAPE:pkg.module[:attr][@POLICY]` (oracle/prefix/__init__.py), a module, a .py file
(`path/kv_cache.py[:attr][@POLICY]`) or a folder (a package, or one holding kv_cache.py) of the lab's shape,
or `engine` (ours). It runs in a sandboxed child process with the shape's adapter (oracle/prefix/remote.py,
the HW3 grader's sandbox and child process); the grader never imports it.
"""

from pathlib import Path
from typing import Any, Callable

from oracle.grading import python_family
from oracle.grading.grader import GraderError, rubric_for
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric
from oracle.pylocate import locate
from oracle.run_cpu import Budget
from oracle.prefix.checks import CHECKS, DEFAULT_RUBRIC
from oracle.sandbox import Sandbox
from oracle.site import site_folder


def load(path: Path | str | None = None) -> Rubric:
    """The rubric at `path`, or the shipped default; raises RubricError."""
    return rubric_for(CHECKS, path or DEFAULT_RUBRIC)


def resolve(submission: str) -> str:
    """The spec `SHAPE:pkg.module-or-file.py[:attr][@POLICY]` of a submission as the user names it;
    GraderError when it names nothing gradable."""
    from oracle.prefix.implementations import BUILTIN_ENGINE, shapes
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


def grade(submission: str, rubric: Rubric, out_dir: Path, *, site: Path | str | None = None, seed: int | None = None,
          timeout: float = 2.0, on_item: Callable[[ItemResult], None] | None = None, budget: Budget | None = None,
          require_sandbox: bool = False, **_: object) -> GradeReport:
    """Runs every rubric item against the submission, served by its child in one Sandbox for the run (the core's
    pipeline, oracle/grading/python_family.py), with the packages of the site folder `site` (oracle/site.py), if
    given; raises GraderError when it cannot start. One that does not load is graded: every item not run."""
    from oracle.prefix.implementations import policy_for, shapes
    from oracle.prefix.remote import served_pool

    if site is not None:
        try:
            site = site_folder(site)
        except ValueError as exc:
            raise GraderError(f"--site {exc}") from None
    spec = resolve(submission)
    shape, _, rest = spec.partition(":")
    name, _, policy_name = rest.partition("@")
    adapter = shapes()[shape]
    try:
        target = locate(name)
    except ValueError as exc:
        raise GraderError(f"{submission}: {exc}") from None
    policy = policy_for(adapter, policy_name)

    def serve(target: Any, box: Sandbox, timeout: float) -> Any:
        return served_pool(target, adapter, policy, box, timeout, site)

    return python_family.grade("prefix", CHECKS, submission, target, serve, rubric, out_dir, spec=spec, seed=seed,
                               timeout=timeout, on_item=on_item, budget=budget, require_sandbox=require_sandbox)
