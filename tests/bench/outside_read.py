"""Benchmark: what a white-box probe's reading from outside the submission's process costs (c/outside.py: the
driver stopped, /proc/PID/mem read, the driver continued), per operation, on the reference C solution, next to
one API call's round trip over the driver's pipes; and every probe's wall time.

    python tests/bench/outside_read.py [--repeat N]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from oracle.hw3.c.build import build  # noqa: E402
from oracle.hw3.c.probe_adapter import CProbeAdapter  # noqa: E402
from oracle.hw3.probes import PROBES, run_probes  # noqa: E402
from oracle.sandbox import shared  # noqa: E402


def per_call(operation, repeat: int) -> float:
    """The median of `repeat` timings of operation(), in microseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "llm_memory.c").write_text((ROOT / "engine" / "c" / "llm_memory.c").read_text())
        driver = build(Path(work), Path(work) / "cache").graded_driver
        assert driver is not None
        print(f"isolation: {shared().isolation}")
        adapter = CProbeAdapter(driver, limit=600)
        try:
            engine = adapter.init_pool(64 * 1024, bytes(64))
            seq = adapter.call("create_sequence", engine, 1, 33 * 16)
            print(f"counts (engine, ref_count of 1024):   {per_call(lambda: adapter.counts(engine, 10), args.repeat):8.0f} us")
            print(f"sequence (33 blocks, 3 L2 tables):    {per_call(lambda: adapter.sequence(seq), args.repeat):8.0f} us")
            print(f"move_l2 (an edit):                    {per_call(lambda: adapter.move_l2(seq, 0, 0), args.repeat):8.0f} us")
            print(f"append_kv (an API call, over pipes):  "
                  f"{per_call(lambda: adapter.call('append_kv', engine, 2, 0), args.repeat):8.0f} us")
        finally:
            adapter.close()
        for name in PROBES:
            start = time.monotonic()
            (result,) = run_probes(driver, only=[name])
            print(f"probe {name:20s} {time.monotonic() - start:6.2f} s  {'passed' if result.passed else result.detail}")


if __name__ == "__main__":
    main()
