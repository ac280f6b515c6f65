"""The C submission's live heap blocks, read from outside its process: the kernel's list of its mappings.

Natively the driver gives every block pages of its own in a region reserved at REGION_BASE, with an
inaccessible page on each side, and makes a freed block's pages inaccessible again (driver.c, "an electric
fence"). So the live blocks are the region's accessible mappings, one each, and /proc/PID/maps of the driver,
read by the grader between calls while the driver waits for its next request, says how many there are and how
many pages they hold. The kernel keeps that list; nothing the submission writes in its memory changes it, and
changing the mappings themselves takes a system call the build refuses (refusal.py: mmap, mprotect, syscall...).

The driver's host pid comes from the grader's own process tree (the run's wrapper is our child; under
bubblewrap the driver is in a pid namespace of its own, so a pid it would give is not the host's), never from
the driver.
"""

import os
from dataclasses import dataclass

REGION_BASE = 0x200000000000  # driver.c's FENCE_BASE
REGION_SPAN = 1 << 40  # no reservation is larger: the region lies in [REGION_BASE, REGION_BASE + REGION_SPAN)
PAGE = 4096


@dataclass(frozen=True, slots=True)
class HeapMaps:
    """The region's accessible mappings: one private mapping per live block, one shared page per page a read or
    write outside any live block touched (driver.c maps it so, and lets the access go on)."""

    blocks: int
    bytes: int  # the pages they hold (a block's exact size is the process's own record)
    faulted: int = 0  # pages of guard or freed memory the submission's code read or wrote: memory errors


def _parents() -> dict[int, list[int]]:
    """Every process's children, from /proc/*/stat (the tree as the kernel keeps it)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _maps(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return maps.read().splitlines()
    except OSError:  # gone, or not ours to read
        return None


def _in_region(line: str) -> tuple[int, int, str] | None:
    span, perms = line.split(" ", 2)[:2]
    start, end = (int(part, 16) for part in span.split("-"))
    if REGION_BASE <= start < REGION_BASE + REGION_SPAN:
        return start, end, perms
    return None


def driver_pid(root: int) -> int | None:
    """The process under `root` (a run the grader started) whose mappings hold the heap region: the driver,
    once its main has begun. None when there is none (yet, or any more)."""
    tree = _parents()
    todo, seen = [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        lines = _maps(pid)
        if lines and any(_in_region(line) for line in lines if line[:2] == "20"):
            return pid
        todo.extend(tree.get(pid, ()))
    return None


def heap_maps(pid: int) -> HeapMaps | None:
    """The live blocks of driver `pid` as its mappings show them; None when they cannot be read."""
    lines = _maps(pid)
    if lines is None:
        return None
    blocks = size = faulted = 0
    for line in lines:
        if line[:2] != "20" or not (found := _in_region(line)):
            continue
        start, end, perms = found
        if perms[3] == "s":  # a page a stray access touched, mapped again shared
            faulted += (end - start) // PAGE
        elif perms[:3] != "---":  # readable, writable or executable: a live block's pages
            blocks += 1
            size += end - start
    return HeapMaps(blocks, size, faulted)
