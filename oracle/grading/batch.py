"""Grade a directory of submissions, N at a time, each in its own `pagedcheck grade` process.

A separate process per submission means a submission that wrecks its grader (or a grader bug it triggers)
costs that one row and nothing else; a grader that outlives its time limit is killed with its process group.
Results: OUT/<folder>/report.json, OUT/<folder>/results.json (Gradescope), any repro files beside them, and
OUT/scores.csv with one row per submission. Each row has a folder of its own (its name, unless that is a
name the batch itself writes). An entry that leaves DIR (a symbolic link, wherever it points) is never
graded: its row says it was skipped.
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
from oracle.printable import printable


@dataclass(frozen=True)
class Row:
    name: str
    exit_status: int
    score: float
    max_score: float
    items: dict[str, float]  # item id -> points
    error: str = ""  # why the submission has no report, or the grader error it reported
    seconds: float = 0.0
    folder: str = ""  # its folder under OUT; "" when it was skipped
    skipped: bool = False  # an entry that is not a folder inside DIR: never graded
    isolation: str = ""  # the sandbox its grade ran in (oracle/isolation.py ISOLATIONS); "" without a report

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        return {EXIT_OK: "passed", EXIT_FAILED: "failed"}.get(self.exit_status, "grader error")


RESERVED = frozenset({"scores.csv"})  # what the batch writes into OUT besides the folders


def find_submissions(directory: Path) -> tuple[list[Path], list[Row]]:
    """The folders of `directory` to grade (hidden ones and plain files left out), and a skipped row for
    each entry that is a symbolic link: grading it would grade another folder under this entry's name."""
    base = directory.resolve()
    folders, skipped = [], []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            why = f"skipped: a symbolic link (to {os.readlink(entry)!r}), not a folder inside {directory}"
            skipped.append(Row(entry.name, EXIT_GRADER, 0, 0, {}, why, skipped=True))
        elif entry.is_dir():
            folders.append(base / entry.name)
    return folders, skipped


def folder_names(names: Sequence[str]) -> dict[str, str]:
    """A distinct folder under OUT for each (distinct) name: the name itself, unless the batch writes a
    file of that name, then the name with the first free -N suffix."""
    taken = set(names) | RESERVED
    folders = {}
    for name in names:
        folder, n = name, 0
        while folder in RESERVED or (folder != name and folder in taken):
            n += 1
            folder = f"{name}-{n}"
        taken.add(folder)
        folders[name] = folder
    return folders


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
    skipped: Sequence[Row] = (),
    kept: Sequence[Row] = (),
) -> list[Row]:
    """Runs `command(submission, its_out_dir)` for each submission, `jobs` at a time, killing one that runs
    past `timeout` seconds; writes scores.csv with a row per submission, the `skipped` rows and the `kept`
    ones (earlier grades left as they are: grade-all --only). Returns the rows of this run, kept ones left out."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = list(skipped)
    total = len(submissions) + len(skipped)
    start = time.monotonic()

    def report(row: Row) -> None:
        if progress:
            score = f"{row.score:g}/{row.max_score:g}" if not row.error else row.error.splitlines()[0]
            where = f", in {row.isolation}" if row.isolation else ""
            line = (f"grade-all: [{len(rows)}/{total}] {row.name}: {row.status}, {score} "
                    f"({row.seconds:.1f} s{where}; {time.monotonic() - start:.0f} s in all)")
            progress.write(printable(line, lines=False) + "\n")
            progress.flush()

    for row in skipped:
        report(row)
    folders = folder_names([sub.name for sub in submissions])
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_grade_one, sub, out, folders[sub.name], command, timeout, env) for sub in submissions]
        for future in as_completed(futures):
            rows.append(future.result())
            report(rows[-1])
    graded = {row.name for row in rows}
    everything = sorted(rows + [row for row in kept if row.name not in graded], key=lambda row: row.name)
    write_csv(out / "scores.csv", everything, item_ids)
    rows.sort(key=lambda row: row.name)
    return rows


def earlier_rows(out: Path, names: Sequence[str], folders: dict[str, str]) -> list[Row]:
    """The rows of an earlier grade-all into `out` for `names`: each from its folder's report.json, so the
    scores.csv written now says what those reports say; a submission whose folder holds no report keeps its
    row of the earlier scores.csv. Names the earlier scores.csv does not hold are left out."""
    try:
        with open(out / "scores.csv", newline="") as f:
            earlier = {row["submission"]: row for row in csv.DictReader(f)}
    except (OSError, KeyError, csv.Error):
        return []
    rows = []
    for name in names:
        old = earlier.get(cell(name))  # the CSV holds names escaped
        if old is None or old.get("status") == "skipped":
            continue
        folder = folders.get(name) or uncell(old.get("folder") or "") or name  # the CSV holds the folder escaped too
        try:
            report = json.loads((out / folder / "report.json").read_text())
            items = {item["id"]: item["points"] for item in report["items"]}
            rows.append(Row(name, report["exit_status"], report["score"], report["max_score"], items,
                            report.get("grader_error") or "", report.get("seconds", 0.0), folder,
                            isolation=isolation_name(report.get("isolation", ""))))
        except (OSError, ValueError, KeyError, TypeError):
            status = {"passed": EXIT_OK, "failed": EXIT_FAILED}.get(old.get("status", ""), EXIT_GRADER)
            items = {key: float(value) for key, value in old.items()
                     if key not in ("submission", "score", "max_score", "status", "error", "folder", "isolation")
                     and value}
            rows.append(Row(name, status, float(old.get("score") or 0), float(old.get("max_score") or 0), items,
                            uncell(old.get("error") or ""), 0.0, folder, isolation=old.get("isolation") or ""))
    return rows


def _grade_one(
    submission: Path, out: Path, folder: str, command: Callable[[Path, Path], list[str]], timeout: float,
    env: dict[str, str] | None,
) -> Row:
    out = out / folder
    out.mkdir(parents=True, exist_ok=True)
    for earlier in ("report.json", "results.json"):  # a rerun whose grade writes none must show no old score
        (out / earlier).unlink(missing_ok=True)
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
        return Row(submission.name, EXIT_GRADER, 0, 0, {}, f"grading took longer than {timeout:g} s", seconds, folder)
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        tail = (out / "grader.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return Row(submission.name, EXIT_GRADER, 0, 0, {}, f"no report (exit {status}): {tail[0]}", seconds, folder)
    items = {item["id"]: item["points"] for item in report["items"]}
    return Row(submission.name, report["exit_status"], report["score"], report["max_score"], items,
               report.get("grader_error") or "", seconds, folder, isolation=isolation_name(report.get("isolation", "")))


def isolation_name(description: str) -> str:
    """The isolation level a report's one-line isolation names (its first word: oracle/sandbox.py)."""
    word = description.split(" ", 1)[0].rstrip(":")
    return word if word.isalpha() else ""


FORMULA_STARTS = ("=", "+", "-", "@")  # what a spreadsheet reads as the start of a formula in a cell


def cell(text: str) -> str:
    """Text a submission chose (its folder's name, an error quoting it), as a CSV cell: control characters
    escaped, and a leading quote before a formula's first character, so a spreadsheet opening scores.csv shows
    the text and computes nothing (the OWASP advice for CSV injection)."""
    shown = printable(text, lines=False)
    return "'" + shown if shown.startswith(FORMULA_STARTS) else shown


def uncell(shown: str) -> str:
    """What `cell` was given, as far as the quote goes (control characters stay escaped)."""
    return shown[1:] if shown.startswith("'") and shown[1:].startswith(FORMULA_STARTS) else shown


def write_csv(path: Path, rows: Sequence[Row], item_ids: Sequence[str]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "score", "max_score", "status", *item_ids, "error", "folder", "isolation"])
        for row in rows:  # names and errors carry submission text: no control character nor formula reaches a TA
            writer.writerow([cell(row.name), f"{row.score:g}", f"{row.max_score:g}", row.status,
                             *(f"{row.items[i]:g}" if i in row.items else "" for i in item_ids),
                             cell(row.error), cell(row.folder), row.isolation])


def exit_status(rows: Sequence[Row]) -> int:
    """2 if any submission could not be graded (skipped ones included), else 1 if any failed an item, else 0."""
    return max((row.exit_status for row in rows), default=EXIT_OK)
