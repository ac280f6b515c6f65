"""Benchmark: where one alloc_failure try's time goes (each try replays the program on a fresh driver), and what
trying every allocation of a call making N allocations would cost, from those parts.

    python tests/bench/alloc_try_cost.py [--scratch N] [--repeat R]

Measures, each R times (medians printed, with the fastest):
- the sandbox's start alone: /bin/true run as every driver is run (bubblewrap or the fallback, the supervisor);
- a driver's start: the sandbox, the driver's exec and its seccomp listener's handover, up to its first request;
- llm_init(2560) and llm_destroy on the reference, and the driver's end (close);
- one create_sequence of review 6's many_scratch_allocations with N scratch buffers (N checked malloc/free pairs on
  the fenced heap, every mapping call of which the grader's ledger answers): its wall time, the grader's and the
  driver's CPU time (the rest of the wall is waiting for a CPU) and the mapping calls the ledger answered; and the same call with its (N/2)-th allocation failed (from there on
  every allocation of the call fails).
Then the item's cost for a program of six calls of N allocations each, from those parts: every try a fresh driver
replaying the calls before its own (main's design), and, as a floor no isolation can go under, every try only its
own call (no start, no replay). Projections are labelled as such. Prints figures; asserts nothing.
"""

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from oracle.hw3.c.adapter import CAdapter  # noqa: E402
from oracle.hw3.c.adapter import load_c  # noqa: E402
from oracle.native.outside import driver_pid  # noqa: E402
from oracle.sandbox import shared  # noqa: E402
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402

SCRATCH = SUBMISSIONS / "hostile" / "review6" / "many_scratch_allocations.patch"
CALLS = 6  # programs/allocation_failure.txt's calls


def scratch_source(count: int) -> str:
    """Review 6's many_scratch_allocations (every call first makes and frees scratch buffers, each checked) with
    `count` buffers a call instead of 500."""
    source = patched(REFERENCE_C.read_text(), SCRATCH)
    assert source.count("i < 500;") == 1
    return source.replace("i < 500;", f"i < {count};")


def driver(source: str, folder: Path) -> CAdapter:
    folder.mkdir()
    (folder / "llm_memory.c").write_text(source)
    return load_c(folder / "llm_memory.c", folder / "build")()


def figures(name: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(f"  {name:58s} median {1000 * median:8.1f} ms   fastest {1000 * min(seconds):8.1f} ms")
    return median


def timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def driver_cpu(adapter: CAdapter) -> float:
    """The CPU seconds the driver's process has used (user and system), read from /proc."""
    pid = driver_pid(adapter._proc, adapter.box.expose(adapter.driver))[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=int, default=500, help="scratch buffers a call (review 6's: 500)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    box = shared()
    print(f"isolation: {box.isolation}; {args.repeat} repeats; {args.scratch} scratch buffers a call")
    with tempfile.TemporaryDirectory() as tmp:
        reference = driver(REFERENCE_C.read_text(), Path(tmp) / "reference")
        scratch = driver(scratch_source(args.scratch), Path(tmp) / "scratch")
        sandbox, start, init, destroy, close = [], [], [], [], []
        for _ in range(args.repeat):
            sandbox.append(timed(lambda: box.run(["/bin/true"], timeout=60)))
            start.append(timed(reference._start))
            engine = None

            def llm_init() -> None:
                nonlocal engine
                engine = reference.llm_init(2560)

            init.append(timed(llm_init))
            destroy.append(timed(lambda: reference.llm_destroy(engine)))
            close.append(timed(reference.close))
        call, call_cpu, call_driver, failed = [], [], [], []
        answered = 0
        for _ in range(args.repeat):
            engine = scratch.llm_init(2560)
            listener = scratch._listener
            before, grader, driven = (listener.handled if listener else 0), cpu(), driver_cpu(scratch)
            call.append(timed(lambda: scratch.create_sequence(engine, 1, 20)))
            call_cpu.append(cpu() - grader)
            call_driver.append(driver_cpu(scratch) - driven)
            answered = (listener.handled if listener else 0) - before
            made = scratch.last_call.allocations
            scratch.fail_allocation(max(made // 2, 1))
            failed.append(timed(lambda: scratch.create_sequence(engine, 2, 20)))
            scratch.close()
        print("one try's parts (measured):")
        parts = [figures("sandbox start alone (/bin/true)", sandbox),
                 figures("driver start (sandbox, exec, listener handover)", start),
                 figures("llm_init(2560), reference", init),
                 figures("llm_destroy, reference", destroy),
                 figures("driver end (close)", close)]
        whole = figures(f"create_sequence making {made} allocations ({answered} mapping calls)", call)
        figures("  its CPU time in the grader", call_cpu)
        figures("  its CPU time in the driver (whole clock ticks)", call_driver)
        half = figures(f"the same with allocation {max(made // 2, 1)} failed (and every later one)", failed)
    fixed = parts[1] + parts[2] + parts[4]
    tries = CALLS * made
    replayed = sum(made * (fixed + index * whole + half) for index in range(CALLS))
    floor = tries * half
    print(f"projected from the medians, {CALLS} calls of {made} allocations, {tries} tries:")
    print(f"  every try a fresh driver replaying the calls before its own (main):  {replayed:8.0f} s")
    print(f"  the same with a free start (only the replay and the call):           {replayed - tries * fixed:8.0f} s")
    print(f"  floor: every try only its own call, no start, no replay:             {floor:8.0f} s")


if __name__ == "__main__":
    main()
