"""One CPU for a grade or a fuzz run: the grader and the submission's processes take turns (a request, the
mapping calls the grader answers, the reply) and never work at once, so a second CPU gives them nothing but
wake-ups across CPUs, which on a virtual machine cost more than the work between them. Measured on this project's
2-CPU virtual machine, `pagedcheck grade` of a broken fixture (tests/submissions/broken/create_free.patch, the
tests' small rubric): 16.8 and 27.9 s wall, 4.6 and 9.8 s of system CPU free to move; 12.3 and 13.0 s, 2.8 and
3.0 s pinned by `taskset -c 0`.

A grade claims a CPU no other grade of the same user holds (an exclusive lock on one file per CPU, in the user's
pagedcheck cache, which the kernel lets go when its holder ends), the one it is on if it can; with every CPU claimed
it runs where the scheduler puts it. Two grades at once so never share a CPU while another idles (the CPU each is on
when it starts is often the same one: two test workers pinned together ran grades two to three times slower). The
processes a grade starts inherit its CPU; after it, the thread may run anywhere it could before. Which CPU is no
fact of any verdict: a call's time is counted in CPU seconds (oracle/run_cpu.py)."""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from oracle.hypothesis_home import cache_home, own_cache


def current_cpu() -> int | None:
    """The CPU the calling thread last ran on (/proc's `processor`, field 39 of stat); None when unreadable."""
    try:
        with open("/proc/thread-self/stat", "rb") as stat_file:
            return int(stat_file.read().rsplit(b")", 1)[1].split()[36])  # fields from the 3rd on, after the name's ")"
    except (OSError, ValueError, IndexError):
        return None


def claims_folder() -> str | None:
    """The folder of this user's CPU claims, in pagedcheck's cache (a grade leaves nothing in /tmp), made private to
    them; None where it is not theirs alone or cannot be made (then no grade claims a CPU)."""
    folder = cache_home() / "cpus"
    try:
        own_cache(folder, False, "the CPU claims")
    except OSError:
        return None
    return str(folder)


def claim_a_cpu(cpus: set[int], first: int | None) -> tuple[int, int] | None:
    """A CPU of `cpus` no other claim holds, `first` if free, and the open claim (a descriptor, closed on exec,
    whose closing lets it go); None when each is held or claims cannot be made."""
    folder = claims_folder()
    if folder is None:
        return None
    for cpu in sorted(cpus, key=lambda c: (c != first, c)):
        try:
            claim = os.open(os.path.join(folder, f"cpu{cpu}"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                            0o600)
        except OSError:
            return None
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(claim)
            continue
        return cpu, claim
    return None


@contextmanager
def on_one_cpu() -> Iterator[None]:
    """The calling thread, and every process it starts meanwhile, on a CPU no other grade holds; its CPUs as they
    were after. Nothing changes where it may run on one CPU already (an inner grade, `taskset`), where every CPU
    is claimed, or where a CPU cannot be read or set."""
    try:
        allowed = os.sched_getaffinity(0)
    except OSError:
        allowed = set()
    claimed = claim_a_cpu(allowed, current_cpu()) if len(allowed) >= 2 else None
    if claimed is None:
        yield
        return
    cpu, claim = claimed
    try:
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
    finally:
        os.close(claim)
