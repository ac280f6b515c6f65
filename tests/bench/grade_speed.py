"""Benchmark: wall time to grade the reference C solution with the default rubric, and the C adapter's fuzz
steps per (wall) second as a ratio of a bare no-op Hypothesis machine's, in the same run.

    python tests/bench/grade_speed.py [--examples N] [--steps N] [--seed N]

Targets: grading the reference in at most 20 s on a 2-core machine; a ratio of at least 0.3.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent)]

from fuzz_speed import compare_with_bare  # noqa: E402

from oracle.hw3.c.adapter import load_c  # noqa: E402
from oracle.hw3.grade import grade, load  # noqa: E402
from oracle.hw3.machine import machine_for  # noqa: E402
from oracle.stats import RunStats  # noqa: E402

REFERENCE = ROOT / "engine" / "c"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        report = grade(str(REFERENCE), load(), Path(out))
        wall = time.perf_counter() - start
    slowest = sorted(report.items, key=lambda item: -item.seconds)[:3]
    print(f"grade reference: {wall:.1f} s wall, {report.score:g}/{report.max_score:g} "
          f"(slowest: {', '.join(f'{i.id} {i.seconds:.1f} s' for i in slowest)}; target <= 20 s)")

    stats = RunStats()  # the driver is a process of its own: wall time
    compare_with_bare("C adapter", machine_for(load_c(REFERENCE), stats), stats, args.examples, args.steps, args.seed,
                      clock=time.perf_counter, target=0.3)


if __name__ == "__main__":
    main()
