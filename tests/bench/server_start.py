"""Benchmark: how long a start of the Python server's run takes (oracle/child.py: `frozen=True`, `private_tmp=False`),
under the isolation this machine gives and under the Landlock fallback.

    python tests/bench/server_start.py [--starts N]

Each start runs the system Python from the frozen runtime (oracle/run_view.py, one view) and imports json, ctypes and
zoneinfo; the first start of each sandbox (which may build the copy) is not counted.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle import isolation  # noqa: E402
from oracle.runtime import PYTHON  # noqa: E402
from oracle.sandbox import Sandbox  # noqa: E402


def per_start(starts: int) -> tuple[str, float]:
    argv = [PYTHON, "-I", "-c", "import json, ctypes, zoneinfo"]
    with Sandbox() as box:
        box.run(argv, timeout=120, private_tmp=False, frozen=True)
        began = time.perf_counter()
        for _ in range(starts):
            box.run(argv, timeout=60, private_tmp=False, frozen=True)
        return box.isolation, (time.perf_counter() - began) / starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()
    for fallback in (False, True):
        if fallback:
            isolation.BWRAP, isolation._probed = "bwrap-that-is-not-installed", {}
        name, seconds = per_start(args.starts)
        print(f"{name}: {seconds * 1000:.0f} ms per server start ({args.starts} starts)")


if __name__ == "__main__":
    main()
