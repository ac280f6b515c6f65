"""Benchmark: `pagedcheck grade-all --jobs 2` on a generated class, with progress, the peak memory of the
grader's process tree and the throughput in submissions per minute.

    python tests/bench/grade_all_scale.py [--count 200] [--jobs 2] [--rubric FILE] [--time-limit S] [--keep DIR]

The class cycles through the reference and every C fixture under tests/submissions/ (broken and hostile,
a hanging and a flooding one among them), each copy made distinct by a comment, so no two submissions share
a build. A hanging or flooding submission should cost its own time, not the batch's: the slowest rows are
printed. Not part of CI: a class of 200 takes tens of minutes on a 2-core machine.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402


def variants() -> list[tuple[str, str]]:
    """(name, source) for the reference and every fixture; hang and flood first, so a small class has them."""
    reference = REFERENCE_C.read_text()
    patches = sorted(SUBMISSIONS.glob("*/*.patch"), key=lambda p: (p.stem not in ("hang", "flood"), p.parent.name, p.stem))
    return [("reference", reference)] + [(f"{p.parent.name}-{p.stem}", patched(reference, p)) for p in patches]


def make_class(directory: Path, count: int) -> Counter[str]:
    """`count` submission folders: every other one the reference, the rest the fixtures in turn."""
    kinds = variants()
    made: Counter[str] = Counter()
    fixtures = iter(kinds[1:] * (count // max(len(kinds) - 1, 1) + 1))
    for number in range(count):
        name, source = kinds[0] if number % 2 else next(fixtures)
        folder = directory / f"student{number:03d}-{name}"
        folder.mkdir(parents=True)
        (folder / "llm_memory.c").write_text(f"/* student {number} */\n{source}")
        made[name.split("-")[0]] += 1
    return made


def tree_rss(pid: int) -> int:
    """Resident memory (bytes) of `pid` and every process below it, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parent = int(fields.get("PPid", "0").strip())
        children.setdefault(parent, []).append(int(entry))
        rss[int(entry)] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo += children.get(current, [])
    return total


def report_seconds(path: Path) -> float:
    try:
        return float(json.loads(path.read_text())["seconds"])
    except (OSError, ValueError, KeyError):
        return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="submissions in the class (default: 200)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rubric", type=Path, help="a rubric file (default: the shipped one)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="grade-all --time-limit (default: 300)")
    parser.add_argument("--keep", type=Path, help="make the class and its grades here, and keep them")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="pagedcheck-scale-"))
    klass = work / "class"
    made = make_class(klass, args.count)
    print(f"class of {args.count} in {klass}: {dict(made)}", flush=True)
    command = [sys.executable, "-m", "oracle.cli", "grade-all", str(klass), "--jobs", str(args.jobs),
               "--time-limit", str(args.time_limit)] + (["--rubric", str(args.rubric)] if args.rubric else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    grader = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.5):
            peak = max(peak, tree_rss(grader.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert grader.stdout is not None
    for line in grader.stdout:
        print(line.rstrip(), flush=True)
        if line.startswith("grade-all: ["):
            print(f"  (peak RSS so far {peak / 2**20:.0f} MiB)", flush=True)
    status = grader.wait()
    done.set()
    sampler.join()
    minutes = (time.monotonic() - start) / 60
    grades = work / "class-grades"
    rows = list(csv.DictReader((grades / "scores.csv").open()))
    print(f"grade-all exit {status}: {dict(Counter(row['status'] for row in rows))}")
    took = {row["submission"]: report_seconds(grades / row["folder"] / "report.json") for row in rows if row["folder"]}
    slowest = sorted(took, key=lambda name: -took[name])[:5]
    print(f"slowest grades: {', '.join(f'{name} {took[name]:.0f} s' for name in slowest)}")
    print(f"{len(rows)} submissions in {minutes:.1f} min with --jobs {args.jobs}: "
          f"{len(rows) / minutes:.1f} submissions per minute; peak RSS of the grader tree {peak / 2**20:.0f} MiB")
    print(f"(the class and its grades are in {work})")


if __name__ == "__main__":
    main()
