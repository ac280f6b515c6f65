"""Benchmark: fuzz steps per second on a Python implementation in this process and in its child process.

    python tests/bench/python_child_speed.py [--examples N] [--steps N] [--seed N] [--impl SPEC]

Grading runs Python submissions in a sandboxed child (oracle/hw3/pyremote.py); `pagedcheck fuzz` runs them
here. Both runs use the same seed, so they make the same calls; the ratio is what the child costs.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle.hw3.adapters import load_python  # noqa: E402
from oracle.hw3.machine import machine_for  # noqa: E402
from oracle.hw3.pyremote import served  # noqa: E402
from oracle.stats import RunStats  # noqa: E402
from tests.bench.fuzz_speed import steps_per_second  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=110)
    parser.add_argument("--impl", default="engine.llm_memory")
    args = parser.parse_args()
    local_stats, child_stats = RunStats(), RunStats()
    local = steps_per_second(machine_for(load_python(args.impl), local_stats), local_stats, args.examples, args.steps, args.seed)
    with served(args.impl) as remote:
        child = steps_per_second(machine_for(remote, child_stats), child_stats, args.examples, args.steps, args.seed)
    print(f"in process: {local:.0f} steps/s ({local_stats.steps} steps)")
    print(f"child process: {child:.0f} steps/s ({child_stats.steps} steps)")
    print(f"ratio: {child / local:.2f}")


if __name__ == "__main__":
    main()
