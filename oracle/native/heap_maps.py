"""The C submission's live heap blocks, read from outside its process: the kernel's list of its mappings.
Used where the driver could hand the grader no seccomp listener (no user notification on this kernel): with
one, the grader's ledger answers every mapping call itself (ledger.py) and this is not read.

Natively the driver gives every block pages of its own in a region reserved at REGION_BASE, with an
inaccessible page on each side, and makes a freed block's pages inaccessible again (driver.c, "an electric
fence"). So the live blocks are the region's accessible mappings, one each, and /proc/PID/maps of the driver,
read by the grader between calls while the driver waits for its next request, says how many there are and how
many pages they hold. The kernel keeps that list; nothing the submission writes in its memory changes it, and
changing the mappings themselves takes a system call the build refuses by name (refusal.py: mmap, mprotect,
syscall...), though not when reached through a computed address: only the ledger closes that.

The driver's host pid comes from the grader's own process tree, the one process under the run the grader
started that runs the driver program (outside.driver_pid, which the white-box probes use too; under bubblewrap
the driver is in a pid namespace of its own, so a pid it would give is not the host's), never from the driver.
"""

import errno
import fcntl
import os
import re
import struct
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


# PROCMAP_QUERY (Linux 6.11): the kernel answers "the next mapping at or after this address" on a maps descriptor
_QUERY = struct.Struct("<QQQQQQQQQIIIIQQ")  # struct procmap_query
PROCMAP_QUERY = (3 << 30) | (_QUERY.size << 16) | (ord("f") << 8) | 17  # _IOWR('f', 17, struct procmap_query)
_COVERING_OR_NEXT, _READABLE, _SHARED = 0x10, 0x01, 0x08


class MapsReader:
    """A driver's mappings, its maps file open for as long as it runs: the region's accessible mappings asked
    of the kernel one at a time (PROCMAP_QUERY), or, on a kernel without it, its maps read as text."""

    def __init__(self, pid: int):
        self.pid = pid
        self.fd = os.open(f"/proc/{pid}/maps", os.O_RDONLY)  # OSError: gone, or not ours to read
        self.query = True

    def heap(self) -> HeapMaps | None:
        """The live blocks now; None when the driver is gone."""
        if not self.query:
            return heap_maps(self.pid)
        blocks = size = faulted = 0
        at, end = REGION_BASE, REGION_BASE + REGION_SPAN
        while at < end:
            asked = bytearray(_QUERY.pack(_QUERY.size, _COVERING_OR_NEXT | _READABLE, at, *(0,) * 12))
            try:
                fcntl.ioctl(self.fd, PROCMAP_QUERY, asked)
            except OSError as error:
                if error.errno == errno.ENOENT:  # no accessible mapping at or after `at`
                    break
                if error.errno in (errno.ENOTTY, errno.EINVAL) and at == REGION_BASE:
                    self.query = False  # an older kernel
                    return heap_maps(self.pid)
                return None
            start, stop, flags = _QUERY.unpack(asked)[3:6]
            if start >= end:
                break
            if flags & _SHARED:  # a page a stray access touched, mapped again shared
                faulted += (stop - start) // PAGE
            else:
                blocks += 1
                size += stop - start
            at = stop
        return HeapMaps(blocks, size, faulted)

    def close(self) -> None:
        os.close(self.fd)


NOT_MAPPED, NOT_READABLE = "your program does not map that address", "your program may not read that address (freed memory, or a guard page)"


def unreadable(maps_fd: int, address: int, length: int) -> str | None:
    """Why the process whose /proc/PID/maps `maps_fd` is may not read [address, address + length) (NOT_MAPPED,
    NOT_READABLE), or None when every byte lies in a readable mapping. The grader's own reading of /proc/PID/mem
    is not the test: it reads an inaccessible page too (a freed block of the fence, a guard page), which the
    process itself may not."""
    at, end = address, address + length
    while at < end:
        asked = bytearray(_QUERY.pack(_QUERY.size, 0, at, *(0,) * 12))
        try:
            fcntl.ioctl(maps_fd, PROCMAP_QUERY, asked)
        except OSError as error:
            if error.errno in (errno.ENOTTY, errno.EINVAL) and at < 1 << 63:  # a kernel before 6.11: maps as text
                return _unreadable_in_text(maps_fd, at, end)
            # ENOENT: no mapping covers `at`; ESRCH: the process is gone
            return NOT_MAPPED if at == address else f"only {at - address} of its {length} bytes are mapped"
        start, stop, flags = _QUERY.unpack(asked)[3:6]
        if start > at:  # the next mapping starts further on: a hole at `at`
            return NOT_MAPPED if at == address else f"only {at - address} of its {length} bytes are mapped"
        if not flags & _READABLE:
            return NOT_READABLE
        at = stop
    return None


def _unreadable_in_text(maps_fd: int, at: int, end: int) -> str | None:
    chunks, offset = [], 0
    while chunk := os.pread(maps_fd, 1 << 16, offset):
        chunks.append(chunk)
        offset += len(chunk)
    for line in b"".join(chunks).splitlines():
        span, perms = line.split()[:2]
        start, stop = (int(part, 16) for part in span.split(b"-"))
        if start <= at < stop:
            if perms[:1] != b"r":
                return NOT_READABLE
            at = stop
            if at >= end:
                return None
    return NOT_MAPPED if at < end else None


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
