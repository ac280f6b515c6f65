"""Benchmark: what the /proc launcher (oracle/proc_view.py) costs a run without procfs under bubblewrap: the wall time
of N runs of /bin/true (`Sandbox.run(procfs=False)`, a native driver's kind of run) with the launcher and with the
mode-0000 /proc it replaces (the launcher left out), taken in turns, and the launcher's first build.

    python tests/bench/proc_view_cost.py [--runs N]

Prints figures; asserts nothing.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from oracle import isolation  # noqa: E402
from oracle.proc_view import launcher  # noqa: E402
from oracle.sandbox import Sandbox  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        built = launcher(Path(tmp))
        print(f"launcher built in {time.perf_counter() - start:.2f} s: {built}")
    with Sandbox() as box:
        if box.isolation != "bubblewrap":
            sys.exit(f"bubblewrap does not run here ({box.isolation}): nothing to compare")
        view = isolation.proc_view(box.as_root)
        print(f"launcher in use: {view}")
        times: dict[str, list[float]] = {"launcher": [], "mode 0000": []}
        for _ in range(runs):
            for name in times:
                isolation._viewed[box.as_root] = view if name == "launcher" else None
                start = time.perf_counter()
                done = box.run(["/bin/true"], timeout=30, private_tmp=False, procfs=False)
                times[name].append(time.perf_counter() - start)
                assert done.status == 0, done
        isolation._viewed[box.as_root] = view
    for name, seconds in times.items():
        print(f"{name:>10}: median {statistics.median(seconds) * 1000:.1f} ms, "
              f"mean {statistics.mean(seconds) * 1000:.1f} ms over {runs} runs")


if __name__ == "__main__":
    main()
