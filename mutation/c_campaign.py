"""Grader strength on C: mutants of a model solution, each graded by the real grader.

    result = run_campaign(Path("engine/c/llm_memory.c"), jobs=2)
    print(render(result, 0.95)); result.score >= 0.95

1. mutation.c_mutants generates every mutant of the source (the operators are in mutation/README.md);
2. each is compiled alone with the official flags against the official header: a mutant that does not
   compile, or only with warnings, is dropped ("not compiling"); one whose object code, debug information
   left out, is byte for byte the original's is "equivalent (identical object code)";
3. every other mutant is graded by `oracle.hw3.grade.grade` in a forked process of its own (its own process
   group, killed whole when the mutant's time bound runs out), with the rubric reordered cheapest first,
   zero-point items last, a smaller fuzz budget, and grading stopped at the first item that fails: the
   grader's `on_item` callback raises as soon as an item fails or cannot run (a kill needs one item);
4. a mutant that passes that quick grading is graded again with the rubric exactly as given (every item, the
   full fuzz budget): only a mutant that also passes that is a survivor;
5. survivors listed in mutation/c_equivalent.toml whose diff still shows the listed line are equivalent.

Score = killed / (killed + untriaged survivors + grader errors); a mutant whose grading outlives its time
bound counts as killed (like mutmut's timeouts: a course's autograder would stop it and give no points).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mutation.c_mutants import Mutant, generate
from mutation.c_result import CampaignError, CampaignResult, Outcome, Triage, load_triage, render

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c" / "llm_memory.c"
# Cheapest first: the fixed scenarios (a few driver calls each), then the ones that also build the
# white-box probes, then the fuzz and valgrind. Items a rubric has that are not listed keep their order
# after these; zero-point items go last, so a mutant they alone kill is visibly "killed by a 0-point item".
COST_ORDER = ("compiles", "null_engine", "create_free", "fork", "append_cow", "check_before_allocate",
              "first_fit", "no_premature_writes", "free_count", "tail_insertion", "llm_destroy", "llm_init",
              "l1_traversal", "fuzz", "memory_safety", "alloc_failure")
QUICK_FUZZ = {"examples": 60, "shrink_replays": 100}


# ---- compiling ------------------------------------------------------------------------------------------


def _header_dir() -> Path:
    from oracle.hw3.c.build import HEADER_DIR

    return HEADER_DIR


def compile_object(source: str, directory: Path) -> bytes | None:
    """The object code (debug sections stripped) of a source compiled alone with the official flags against
    the official header; None when gcc fails or prints anything (a warning fails the official build)."""
    from oracle.hw3.c.build import OFFICIAL_FLAGS, SOURCE_NAME

    directory.mkdir(parents=True, exist_ok=True)
    (directory / SOURCE_NAME).write_text(source)
    proc = subprocess.run(["gcc", *OFFICIAL_FLAGS, "-I", str(_header_dir()), "-c", SOURCE_NAME, "-o", "m.o"],
                          cwd=directory, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0 or (proc.stdout + proc.stderr).strip():
        return None
    strip = subprocess.run(["objcopy", "--strip-debug", "m.o", "s.o"], cwd=directory, capture_output=True)
    if strip.returncode != 0:
        raise CampaignError(f"objcopy --strip-debug failed: {strip.stderr.decode(errors='replace')}")
    return (directory / "s.o").read_bytes()


# ---- grading one mutant ---------------------------------------------------------------------------------


def quick_rubric(rubric: Any, fuzz: dict[str, float] = QUICK_FUZZ) -> Any:
    """The rubric's items cheapest first, zero-point items last, with a smaller fuzz budget."""
    from oracle.grading.rubric import Rubric

    rank = {item_id: n for n, item_id in enumerate(COST_ORDER)}
    items = sorted(rubric.items, key=lambda it: (it.points == 0, rank.get(it.id, len(rank))))
    quick = []
    for item in items:
        if item.id == "fuzz":
            options = {**item.options, **{k: min(v, item.options.get(k, v)) for k, v in fuzz.items()}}
            item = dataclasses.replace(item, options=options)
        quick.append(item)
    return Rubric(rubric.title, tuple(quick), rubric.source)


class _Stop(Exception):
    """Raised from the grader's on_item callback: grading stops at the first failed item."""

    def __init__(self, item: Any) -> None:
        super().__init__(item.id)
        self.item = item


def grade_mutant(source_path: Path, rubric: Any, out_dir: Path, build_cache: Path, stop_early: bool) -> dict:
    """Grades one mutant in this process: {"status", "item", "points", "message"}."""
    from oracle.hw3 import grade as hw3

    def on_item(item: Any) -> None:
        if stop_early and item.status in ("failed", "not_run", "incomplete", "error"):
            raise _Stop(item)

    try:
        report = hw3.grade(str(source_path), rubric, out_dir, build_cache=build_cache, on_item=on_item)
        items = report.items
    except _Stop as stop:
        items = [stop.item]
    except Exception as exc:  # hw3.GraderError, or the grader broke outside a check
        return {"status": "error", "item": "", "points": 0, "message": f"{type(exc).__name__}: {exc}"}
    for item in items:
        if item.status == "error":
            return {"status": "error", "item": item.id, "points": item.max_points, "message": item.message}
        if item.counts_as_failure:
            return {"status": "killed", "item": item.id, "points": item.max_points, "message": item.message}
    return {"status": "survived", "item": "", "points": 0, "message": ""}


def _child(source_path: Path, rubric: Any, out_dir: Path, build_cache: Path, stop_early: bool, result: Path) -> None:
    os.setsid()  # its own process group: a time-out kills the grading and every driver it started
    try:
        verdict = grade_mutant(source_path, rubric, out_dir, build_cache, stop_early)
    except BaseException as exc:  # noqa: BLE001 - reported, never raised in a forked child
        verdict = {"status": "error", "item": "", "points": 0, "message": f"{type(exc).__name__}: {exc}"}
    result.write_text(json.dumps(verdict))
    sys.stdout.flush()
    os._exit(0)


@dataclass
class _Job:
    outcome: Outcome
    process: Any
    result: Path
    started: float


def _grade_all(outcomes: list[Outcome], rubric: Any, work: Path, stop_early: bool, jobs: int, bound: float,
               progress: Callable[[str], None] | None, label: str) -> None:
    """Grades each outcome's mutant in a forked process, `jobs` at a time, filling in status and item."""
    ctx = multiprocessing.get_context("fork")
    running: list[_Job] = []
    try:
        _schedule(ctx, outcomes, running, rubric, work, stop_early, jobs, bound, progress, label)
    finally:  # interrupted: no grading process group outlives the campaign
        for job in running:
            try:
                os.killpg(job.process.pid, signal.SIGKILL)
            except ProcessLookupError:  # not yet its own group leader
                job.process.kill()
            job.process.join()


def _schedule(ctx: Any, outcomes: list[Outcome], running: list[_Job], rubric: Any, work: Path, stop_early: bool,
              jobs: int, bound: float, progress: Callable[[str], None] | None, label: str) -> None:
    pending, done = list(outcomes), 0
    while pending or running:
        while pending and len(running) < jobs:
            outcome = pending.pop(0)
            directory = work / label / outcome.mutant.id.replace("@", "_").replace(":", "_").replace("#", "_")
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            (directory / "llm_memory.c").write_text(outcome.mutant.source)
            result = directory / "verdict.json"
            process = ctx.Process(target=_child, args=(directory / "llm_memory.c", rubric, directory / "out",
                                                       work / "build", stop_early, result), daemon=False)
            process.start()
            running.append(_Job(outcome, process, result, time.monotonic()))
        now = time.monotonic()
        wait = max(0.05, min(job.started + bound for job in running) - now)
        multiprocessing.connection.wait([job.process.sentinel for job in running], timeout=wait)
        for job in list(running):
            alive = job.process.is_alive()
            timed_out = alive and time.monotonic() - job.started > bound
            if alive and not timed_out:
                continue
            if timed_out:
                try:
                    os.killpg(job.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            job.process.join()
            outcome = job.outcome
            outcome.seconds = time.monotonic() - job.started
            outcome.pass_ = label
            if timed_out:
                outcome.status, outcome.item, outcome.message = "timeout", "", f"grading took over {bound:g} s"
            elif job.result.exists():
                verdict = json.loads(job.result.read_text())
                outcome.status, outcome.item = verdict["status"], verdict["item"]
                outcome.points, outcome.message = verdict["points"], verdict["message"]
            else:
                outcome.status, outcome.message = "error", f"the grading process exited {job.process.exitcode}"
            running.remove(job)
            shutil.rmtree(job.result.parent, ignore_errors=True)
            done += 1
            if progress and (done % 25 == 0 or done == len(outcomes)):
                progress(f"{label}: {done}/{len(outcomes)} graded")


# ---- the campaign ---------------------------------------------------------------------------------------


def run_campaign(
    source_path: Path = REFERENCE,
    *,
    jobs: int = 2,
    rubric_path: Path | None = None,
    triage: dict[str, Triage] | None = None,
    mutant_seconds: float = 180.0,
    only: Callable[[Mutant], bool] | None = None,
    progress: Callable[[str], None] | None = None,
) -> CampaignResult:
    """Generates, compiles, filters and grades the mutants of source_path (see the module's docstring);
    `only` keeps a subset of the generated mutants (tests use it)."""
    from oracle.hw3 import grade as hw3

    if shutil.which("gcc") is None or shutil.which("objcopy") is None:
        raise CampaignError("gcc and objcopy must be on PATH")
    source_path = Path(source_path)
    try:
        original = source_path.read_text()
    except OSError as exc:
        raise CampaignError(f"cannot read {source_path}: {exc.strerror}") from None
    triage = load_triage() if triage is None else triage
    rubric = hw3.load(rubric_path)
    start = time.perf_counter()
    generated = generate(original, name=source_path.name, header_dirs=(source_path.parent, _header_dir()))
    selected = [m for m in generated if only is None or only(m)]
    with tempfile.TemporaryDirectory(prefix="pagedcheck-cmut-") as scratch:
        work = Path(scratch)
        reference = compile_object(original, work / "original")
        if reference is None:
            raise CampaignError(f"{source_path} itself does not compile cleanly with the official flags")
        if progress:
            progress(f"{len(generated)} mutants generated; compiling {len(selected)} with the official flags")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            objects = list(pool.map(lambda m: compile_object(m.source, work / "compile" / str(id(m))), selected))
        shutil.rmtree(work / "compile", ignore_errors=True)
        not_compiling = [m for m, obj in zip(selected, objects) if obj is None]
        identical = [m for m, obj in zip(selected, objects) if obj == reference]
        outcomes = [Outcome(m, "pending") for m, obj in zip(selected, objects) if obj is not None and obj != reference]
        if progress:
            progress(f"{len(not_compiling)} do not compile, {len(identical)} have the original's object code; "
                     f"grading {len(outcomes)} with {jobs} jobs")
        _grade_all(outcomes, quick_rubric(rubric), work, True, jobs, mutant_seconds, progress, "quick")
        survivors = [o for o in outcomes if o.status == "survived"]
        if survivors and progress:
            progress(f"{len(survivors)} passed the quick grading; grading them with the full rubric")
        _grade_all(survivors, rubric, work, False, jobs, mutant_seconds * 2, progress, "full")
    for outcome in outcomes:
        entry = triage.get(outcome.mutant.id)
        if outcome.status == "survived" and entry and entry.line in outcome.mutant.mutated_lines:
            outcome.triage = entry
    stale = sorted(set(triage) - {o.mutant.id for o in outcomes if o.triage}) if only is None else []
    return CampaignResult(str(source_path), selected, not_compiling, identical, outcomes,
                          time.perf_counter() - start, jobs, stale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation.c_campaign", description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", type=Path, default=REFERENCE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--threshold", type=float, default=0.95)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", help="mutant ids to grade (default: all)")
    args = parser.parse_args(argv)
    only = (lambda m: m.id in set(args.only)) if args.only else None
    result = run_campaign(args.source, jobs=args.jobs, only=only, progress=lambda s: print(f"mutation: {s}", file=sys.stderr))
    print(render(result, args.threshold))
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(args.threshold), indent=2) + "\n")
    return 0 if result.passed(args.threshold) else 1


if __name__ == "__main__":
    sys.exit(main())
