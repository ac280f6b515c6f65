"""Benchmark: wall time from `pagedcheck fuzz --seed 1` to a printed minimal program, over the broken fixtures.

    python tests/bench/minimal_program.py [--seed N] [--only NAME ...] [--examples N] [--baseline DIR]

Each Python engine of tests/broken/ (a patch, applied into a scratch file) runs as `pagedcheck fuzz --impl FILE.py`, and each C fixture
tests/submissions/broken/X.patch as `pagedcheck fuzz --impl DIR` on the reference patched with it (compile
time included). Prints one line per fixture (seconds, the program's length in steps, programs run, shrink
replays), then the median and the slowest over the fixtures that printed a program. `--baseline DIR` (another
checkout, `git worktree add /tmp/base main` say) runs each fixture with it too, just before, and prints both.
Targets on a 2-core machine: median <= 2 s, slowest <= 15 s.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import PYTHON_ENGINE, REFERENCE_C, SUBMISSIONS, patched, patched_copy  # noqa: E402

PAGEDCHECK = Path(sys.executable).parent / "pagedcheck"


def fixtures(scratch: Path) -> list[tuple[str, str]]:
    """(name, --impl value) for every broken fixture: the Python engines, then the C patches."""
    found = [(f"py:{p.stem}", str(patched_copy(p, PYTHON_ENGINE, scratch / "py" / f"{p.stem}.py")))
             for p in sorted((ROOT / "tests" / "broken").glob("*.patch"))]
    for patch in sorted((SUBMISSIONS / "broken").glob("*.patch")):
        directory = scratch / patch.stem
        directory.mkdir()
        (directory / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), patch))
        found.append((f"c:{patch.stem}", str(directory)))
    return found


def program_steps(program: str) -> int:
    """The program's steps: its lines after `state = ...()`, without the closing teardown."""
    lines = program.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("state = "))
    return len([line for line in lines[start + 1 :] if line != "state.teardown()"])


def run(impl: str, seed: int, examples: int, out: Path, root: Path = ROOT) -> tuple[float, dict | None, int]:
    """One `pagedcheck fuzz` with the checkout `root` first on the path: its wall time, JSON report, status."""
    start = time.perf_counter()
    done = subprocess.run(
        [str(PAGEDCHECK), "fuzz", "--impl", impl, "--seed", str(seed), "--examples", str(examples),
         "--json", str(out), "-q"],
        cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)},
    )
    wall = time.perf_counter() - start
    return wall, json.loads(out.read_text()) if out.exists() else None, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--only", nargs="*", help="fixture names (e.g. py:no_cow c:fork)")
    parser.add_argument("--baseline", type=Path, help="another checkout to run each fixture with first")
    args = parser.parse_args()

    times: dict[str, float] = {}
    before: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, impl in fixtures(Path(scratch)):
            if args.only and name not in args.only:
                continue
            then = ""
            if args.baseline:
                old_wall, old, _ = run(impl, args.seed, args.examples, Path(scratch) / f"old_{name.replace(':', '_')}.json",
                                       args.baseline.resolve())
                if old and not old["passed"]:
                    before[name] = old_wall
                    then = f"  (baseline {old_wall:5.1f} s, {program_steps(old['program']):3} steps, {old['shrink_replays']} replays)"
            wall, report, status = run(impl, args.seed, args.examples, Path(scratch) / f"{name.replace(':', '_')}.json")
            if report is None:
                print(f"{name:36} {wall:6.1f} s  exit {status}, no report (does not build?)")
            elif report["passed"]:
                print(f"{name:36} {wall:6.1f} s  no divergence ({report['examples']} programs)")
            else:
                times[name] = wall
                replays = report.get("shrink_replays", "-")
                print(f"{name:36} {wall:6.1f} s  {program_steps(report['program']):3} steps  "
                      f"{report['examples']} programs, {replays} shrink replays{then}")
            sys.stdout.flush()
    if times:
        slowest = max(times, key=times.__getitem__)
        print(f"\n{len(times)} fixtures printed a minimal program: median {statistics.median(times.values()):.1f} s, "
              f"slowest {times[slowest]:.1f} s ({slowest}); targets: median <= 2 s, slowest <= 15 s")
    if before:
        slowest = max(before, key=before.__getitem__)
        print(f"baseline, {len(before)} fixtures: median {statistics.median(before.values()):.1f} s, "
              f"slowest {before[slowest]:.1f} s ({slowest})")


if __name__ == "__main__":
    main()
