"""One CPU for a grade or a fuzz run: the grader and the submission's processes take turns (a request, the
mapping calls the grader answers, the reply) and never work at once, so a second CPU gives them nothing but
wake-ups across CPUs, which on a virtual machine cost more than the work between them. Measured on this project's
2-CPU virtual machine, `pagedcheck grade` of a broken fixture (tests/submissions/broken/create_free.patch, the
tests' small rubric): 16.8 and 27.9 s wall, 4.6 and 9.8 s of system CPU free to move; 12.3 and 13.0 s, 2.8 and
3.0 s pinned by `taskset -c 0`. So a grade runs on the one CPU its thread is on when it starts (the scheduler's
choice, so two grades at once go to two CPUs), and the processes it starts inherit it; after it, the thread may
run anywhere it could before. Which CPU is no fact of any verdict: a call's time is counted in CPU seconds
(oracle/run_cpu.py)."""

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress


def current_cpu() -> int | None:
    """The CPU the calling thread last ran on (/proc's `processor`, field 39 of stat); None when unreadable."""
    try:
        with open("/proc/thread-self/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[36])  # fields from the 3rd on, after the name's ")"
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def on_one_cpu() -> Iterator[None]:
    """The calling thread, and every process it starts meanwhile, on its current CPU; its CPUs as they were
    after. Nothing changes where it may run on one CPU already (an inner grade, `taskset`), or where the CPU
    cannot be read or set."""
    try:
        allowed = os.sched_getaffinity(0)
    except OSError:
        allowed = set()
    cpu = current_cpu()
    if len(allowed) < 2 or cpu not in allowed:
        yield
        return
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with suppress(OSError):
            os.sched_setaffinity(0, allowed)
