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
import re
from dataclasses import dataclass

REGION_BASE = 0x200000000000  # driver.c's FENCE_BASE
REGION_SPAN = 1 << 40  # no reservation is larger: the region lies in [REGION_BASE, REGION_BASE + REGION_SPAN),
# the addresses of 12 hex digits that begin with 20
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


def _maps(pid: int) -> bytes | None:
    """/proc/PID/maps, read as bytes (the cheapest way: it is read after every call)."""
    try:
        fd = os.open(f"/proc/{pid}/maps", os.O_RDONLY)
    except OSError:  # gone, or not ours to read
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


# a line of the region, [REGION_BASE, REGION_BASE + REGION_SPAN): start, end, permissions
_REGION_LINE = re.compile(rb"^(20[0-9a-f]{10})-([0-9a-f]+) ([-r][-w][-x][ps])", re.M)


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
        maps = _maps(pid)
        if maps and _REGION_LINE.search(maps):
            return pid
        todo.extend(tree.get(pid, ()))
    return None


def heap_maps(pid: int) -> HeapMaps | None:
    """The live blocks of driver `pid` as its mappings show them; None when they cannot be read."""
    maps = _maps(pid)
    if maps is None:
        return None
    blocks = size = faulted = 0
    for start, end, perms in _REGION_LINE.findall(maps):
        pages = (int(end, 16) - int(start, 16)) // PAGE
        if perms[3:] == b"s":  # a page a stray access touched, mapped again shared
            faulted += pages
        elif perms[:3] != b"---":  # readable, writable or executable: a live block's pages
            blocks += 1
            size += pages * PAGE
    return HeapMaps(blocks, size, faulted)
