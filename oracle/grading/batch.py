"""Grade a directory of submissions, N at a time, each in its own `pagedcheck grade` process.

A separate process per submission means a submission that wrecks its grader (or a grader bug it triggers)
costs that one row and nothing else; a grader that outlives its time limit is killed with its process group.
Results: OUT/<name>/report.json, OUT/<name>/results.json (Gradescope), any repro files beside them, and
OUT/scores.csv with one row per submission.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TextIO

from oracle.grading.report import EXIT_FAILED, EXIT_GRADER, EXIT_OK


@dataclass(frozen=True)
class Row:
    name: str
    exit_status: int
    score: float
    max_score: float
    items: dict[str, float]  # item id -> points
    error: str = ""  # why the submission has no report, or the grader error it reported
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return {EXIT_OK: "passed", EXIT_FAILED: "failed"}.get(self.exit_status, "grader error")


def grade_all(
    submissions: Sequence[Path],
    out: Path,
    command: Callable[[Path, Path], list[str]],
    item_ids: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 900.0,
    env: dict[str, str] | None = None,
    progress: TextIO | None = sys.stderr,
) -> list[Row]:
    """Runs `command(submission, its_out_dir)` for each submission, `jobs` at a time; writes scores.csv."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_grade_one, sub, out / sub.name, command, timeout, env) for sub in submissions]
        for done, future in enumerate(as_completed(futures), 1):
            row = future.result()
            rows.append(row)
            if progress:
                score = f"{row.score:g}/{row.max_score:g}" if not row.error else row.error.splitlines()[0]
                progress.write(f"grade-all: [{done}/{len(submissions)}] {row.name}: {row.status}, {score} "
                               f"({row.seconds:.1f} s; {time.monotonic() - start:.0f} s in all)\n")
                progress.flush()
    rows.sort(key=lambda row: row.name)
    write_csv(out / "scores.csv", rows, item_ids)
    return rows


def _grade_one(
    submission: Path, out: Path, command: Callable[[Path, Path], list[str]], timeout: float, env: dict[str, str] | None
) -> Row:
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(out / "grader.log", "wb") as log:
        proc = subprocess.Popen(command(submission, out), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                env=env, start_new_session=True)
        try:
            status: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            status = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the grader left behind
        except ProcessLookupError:
            pass
        proc.wait()
    seconds = time.monotonic() - start
    if status is None:
        return Row(submission.name, EXIT_GRADER, 0, 0, {}, f"grading took longer than {timeout:g} s", seconds)
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        tail = (out / "grader.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return Row(submission.name, EXIT_GRADER, 0, 0, {}, f"no report (exit {status}): {tail[0]}", seconds)
    items = {item["id"]: item["points"] for item in report["items"]}
    return Row(submission.name, report["exit_status"], report["score"], report["max_score"], items,
               report.get("grader_error") or "", seconds)


def write_csv(path: Path, rows: Sequence[Row], item_ids: Sequence[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "score", "max_score", "status", *item_ids, "error"])
        for row in rows:
            writer.writerow([row.name, f"{row.score:g}", f"{row.max_score:g}", row.status,
                             *(f"{row.items[i]:g}" if i in row.items else "" for i in item_ids), row.error])


def exit_status(rows: Sequence[Row]) -> int:
    """2 if any submission could not be graded, else 1 if any failed an item, else 0."""
    return max((row.exit_status for row in rows), default=EXIT_OK)
