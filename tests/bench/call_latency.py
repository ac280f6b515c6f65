"""Benchmark: one C call and the grader's observation after it, per call, on the reference.

    python tests/bench/call_latency.py [--calls N]

Builds engine/c/llm_memory.c into the driver, makes N appends to one sequence, observing the engine after each
(the grader reads the pool from its own memory file and the engine from outside the driver: adapter.py), and
prints the wall-clock microseconds per call + observe, and per call alone. Prints figures; asserts nothing.
"""

import argparse
import tempfile
import time
from pathlib import Path

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build

REFERENCE = Path(__file__).resolve().parents[2] / "engine" / "c" / "llm_memory.c"


def per_call(adapter: CAdapter, calls: int, observe: bool) -> float:
    engine = adapter.llm_init(64 * 64 * 4)
    adapter.create_sequence(engine, 1, 1)
    start = time.perf_counter()
    for i in range(calls):
        adapter.append_kv(engine, 1, i)
        if observe:
            adapter.observe(engine)
    spent = time.perf_counter() - start
    adapter.llm_destroy(engine)
    return spent / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        driver = build(REFERENCE, Path(cache)).driver
        assert driver is not None, "the reference does not build"
        adapter = CAdapter(driver)
        try:
            observed = per_call(adapter, args.calls, observe=True)
            alone = per_call(adapter, args.calls, observe=False)
        finally:
            adapter.close()
    print(f"{args.calls} appends on the reference: {observed * 1e6:.0f} us per call + observe, "
          f"{alone * 1e6:.0f} us per call alone")


if __name__ == "__main__":
    main()
