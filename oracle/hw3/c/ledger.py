"""The heap's page ledger: the grader's own record of every change the driver's process makes to its address
space, and its answer to each (driver.c's seccomp filter hands every memory-mapping system call to the grader,
heap_notify.py; this module is the logic alone, on plain values).

Natively every heap block is a mapping of its own in the span [SPAN_START, SPAN_END): a *grant* maps fresh
pages there (private, anonymous, read-write, MAP_FIXED_NOREPLACE), above every page granted before and with a
page between it and the last one; a *free* makes exactly one granted block's pages inaccessible. Nothing else
may make a page of the span accessible without being counted as a *stray* access (a memory error: the driver
maps a page so when the submission's code read or wrote outside any live block, and so does any other code that
makes a guard or freed page accessible). A page is granted at most once in a run, so a dangling pointer never
reaches a later block. Everything that would change a live block's pages otherwise, run code, or map memory
into the span by another call is refused (EPERM).

So the counts a verdict rests on are the grader's: the allocations and frees of each call, the live blocks, the
pages stray accesses touched, and which allocation failed because the grader failed it (failure injection is the
ledger refusing the k-th grant with ENOMEM).
"""

import bisect
import errno
from dataclasses import dataclass, field

SPAN_START = 0x200000000000  # driver.c's FENCE_BASE
SPAN_END = SPAN_START + (1 << 40)
PAGE = 4096

# x86_64 system call numbers the filter hands over (driver.c's ledger_filter)
MMAP, MPROTECT, MUNMAP, MREMAP, MADVISE, SHMAT, REMAP_FILE_PAGES, PKEY_MPROTECT, MAP_SHADOW_STACK = (
    9, 10, 11, 25, 28, 30, 216, 329, 453)
HANDED_OVER = (MMAP, MPROTECT, MUNMAP, MREMAP, MADVISE, SHMAT, REMAP_FILE_PAGES, PKEY_MPROTECT, MAP_SHADOW_STACK)

PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_SHARED, MAP_PRIVATE, MAP_TYPE = 0x01, 0x02, 0x0F
MAP_FIXED, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE = 0x10, 0x20, 0x100000
MREMAP_FIXED = 2

CONTINUE = 0  # the call runs as asked
FULL = errno.EDQUOT  # the heap's budget is spent: the driver serves the block from the C library instead
_U64 = (1 << 64) - 1


@dataclass
class Ledger:
    """One run's ledger. `budget` bounds the bytes of live blocks (the driver's address-space limit allows
    them); `fail_at`: the k-th grant from now is refused with ENOMEM (0: none)."""

    budget: int = 1 << 28
    fail_at: int = 0
    live: dict[int, int] = field(default_factory=dict)  # a live block's first page: its page count
    starts: list[int] = field(default_factory=list)  # the live blocks' first pages, sorted
    live_pages: int = 0
    granted_to: int = 0  # one past the last page ever granted: a grant lies above it, with a page between
    faulted: list[int] = field(default_factory=list)  # pages stray accesses made accessible, sorted
    grants: int = 0  # in the current call (since call_started)
    frees: int = 0
    injected: bool = False  # the current call had an allocation failed by the grader

    def call_started(self, fail_at: int = -1) -> None:
        """A new API call: its counts start at zero; `fail_at` as the request's (-1: unchanged)."""
        self.grants = self.frees = 0
        self.injected = False
        if fail_at >= 0:
            self.fail_at = fail_at

    @property
    def live_blocks(self) -> int:
        return len(self.live)

    @property
    def live_bytes(self) -> int:
        return self.live_pages * PAGE

    def answer(self, nr: int, args: tuple[int, ...]) -> int:
        """The answer to one system call: CONTINUE, or the errno it fails with; the ledger updated."""
        if nr == MMAP:
            return self._mmap(*args[:4])
        if nr == MPROTECT:
            return self._mprotect(args[0], args[1], args[2])
        if nr == MUNMAP:
            return CONTINUE if not _in_span(args[0], args[1]) or not self._touches_live(*_pages(args[0], args[1])) \
                else errno.EPERM
        if nr == MREMAP:  # the driver's own memory and the C library's, never the span's
            old, old_len, new_len, flags, new = args[:5]
            into_span = flags & MREMAP_FIXED and _in_span(new, new_len)
            return errno.EPERM if _in_span(old, max(old_len, 1)) or into_span else CONTINUE
        if nr == MADVISE:
            return errno.EPERM if _in_span(args[0], args[1]) else CONTINUE
        return errno.EPERM  # shmat, remap_file_pages, pkey_mprotect, map_shadow_stack: the driver needs none

    # ---- the calls ----

    def _mmap(self, addr: int, length: int, prot: int, flags: int) -> int:
        if prot & PROT_EXEC:
            return errno.EPERM  # no code but the program's own
        fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)
        if addr == 0 and not fixed:
            return CONTINUE  # the kernel places it, far from the span: the driver's own memory, a pool
        if not _in_span(addr, length):
            return errno.EPERM if flags & MAP_FIXED else CONTINUE  # MAP_FIXED would replace the program's pages
        first, end = _pages(addr, length)
        if (flags & MAP_TYPE == MAP_PRIVATE and flags & MAP_ANONYMOUS and flags & MAP_FIXED_NOREPLACE
                and prot == PROT_READ | PROT_WRITE and addr % PAGE == 0):
            return self._grant(first, end)
        return self._protect(first, end, prot)

    def _mprotect(self, addr: int, length: int, prot: int) -> int:
        if prot & PROT_EXEC or not _in_span(addr, length) or addr % PAGE:
            return errno.EPERM
        first, end = _pages(addr, length)
        if prot == 0 and self.live.get(first) == end - first:
            del self.live[first]  # a free: exactly one live block made inaccessible
            del self.starts[bisect.bisect_left(self.starts, first)]
            self.live_pages -= end - first
            self.frees += 1
            return CONTINUE
        return self._protect(first, end, prot)

    def _grant(self, first: int, end: int) -> int:
        if first <= self.granted_to or self._faulted_in(first, end):
            return errno.EEXIST  # not fresh: the driver moves on
        if (end - first) * PAGE + self.live_bytes > self.budget:
            return FULL
        if self.fail_at > 0:
            self.fail_at -= 1
            if self.fail_at == 0:
                self.injected = True
                return errno.ENOMEM
        self.live[first] = end - first
        self.starts.append(first)  # above every page granted before: the list stays sorted
        self.live_pages += end - first
        self.granted_to = end
        self.grants += 1
        return CONTINUE

    def _protect(self, first: int, end: int, prot: int) -> int:
        """Any other change to pages of the span: refused on a live block's pages; inaccessible is harmless;
        accessible is a stray access, each page counted once (at most 64 at once: a fault's worth)."""
        if self._touches_live(first, end) or (prot != 0 and end - first > 64):
            return errno.EPERM
        if prot != 0:
            for page in range(first, end):
                at = bisect.bisect_left(self.faulted, page)
                if at == len(self.faulted) or self.faulted[at] != page:
                    self.faulted.insert(at, page)
        return CONTINUE

    # ---- pages ----

    def _touches_live(self, first: int, end: int) -> bool:
        """Whether a live block has a page in [first, end)."""
        at = bisect.bisect_left(self.starts, end)  # the blocks that start before `end`
        return at > 0 and self.starts[at - 1] + self.live[self.starts[at - 1]] > first

    def _faulted_in(self, first: int, end: int) -> bool:
        at = bisect.bisect_left(self.faulted, first)
        return at < len(self.faulted) and self.faulted[at] < end


def _pages(addr: int, length: int) -> tuple[int, int]:
    """The pages [first, end) that [addr, addr + length) touches."""
    end = min(addr + max(length, 1), 1 << 64)
    return addr // PAGE, (end + PAGE - 1) // PAGE


def _in_span(addr: int, length: int) -> bool:
    return addr < SPAN_END and min(addr + max(length, 1), _U64) > SPAN_START
