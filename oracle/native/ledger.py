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
into the span by another call is refused (EPERM). The kernel's own access to the span counts too: any other system
call with an argument in the span is handed over (`kernel_call`): judged whole by kernel_access.py's table, each
pointer by its exact length and each string to its NUL, and a range that reaches a page of no live block is a stray as
a fault's is (the kernel's copy of such a page raises no fault: review 15's kernel_reads_past); a call with any other
register in the span is refused (review 16).

Outside the span, no instruction is trusted once the submission's code has run (review 12's
sequences_on_the_drivers_pages: the submission found the driver's own system call instruction by its bytes and
called it). The driver maps its own tables and reply buffer at their bounded size before the handover, and sends
their places with the listener (`driver_regions`): from then on no call may unmap, remap or advise them. The one
mapping the driver makes later is a pool's window, told by what it maps, never by where the call was made nor by the
descriptor's number: MAP_SHARED, read-write, placed by the kernel, at the offset and length the grader gave for that
request (`expect_window`), once, of the file the grader's memory file is (its device and inode, which the caller's
descriptor is read for at the call: heap_notify.py). The submission's code shares the driver's descriptor table, so
a number proves nothing: a file of its own put at the pool's number (dup2) made the next pool a window on that file,
which the grader never reads, while the grader judged its own file, which the submission wrote a clean copy into
(tests/test_ledger_window.py). A mapping of the window's shape whose descriptor names another file (or none the
grader can read) is refused, EBADF: the driver maps no pool but the grader's. Every other mapping outside the span
is memory of the submission's (a computed call of mmap, the driver's own code reached by address, or the C
library's own malloc reached so, which then maps its heap): a request for a block as a grant is (counted, failed in turn by the countdown, FULL past the budget), and a
live block for the rest of the run once granted: the program may not unmap memory outside the span (a free the
grader could not tell from one of memory never mapped). brk may not grow, nor a mapping by mremap (nor be copied
by MREMAP_DONTUNMAP), for the whole run.

A block the fence cannot hold (the live blocks' bytes or number at the ledger's limits) is answered FULL, ENOMEM: the
allocation fails as on a machine out of memory, and nothing is spent (no C library heap takes the block, and no
answer of the ledger's changes how it takes any later call: review 10's ledger_spent and overread_past_budget).
"""

import bisect
import errno
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oracle.native import kernel_access

SPAN_START = 0x200000000000  # driver.c's FENCE_BASE
SPAN_END = SPAN_START + (1 << 40)
PAGE = 4096

# x86_64 system call numbers the filter hands over (driver.c's hand_mappings_to_grader)
MMAP, MPROTECT, MUNMAP, BRK, MREMAP, MADVISE, SHMAT, REMAP_FILE_PAGES, PKEY_MPROTECT, MAP_SHADOW_STACK = (
    9, 10, 11, 12, 25, 28, 30, 216, 329, 453)
MAPPING_CALLS = frozenset((MMAP, MPROTECT, MUNMAP, BRK, MREMAP, MADVISE, SHMAT, REMAP_FILE_PAGES, PKEY_MPROTECT,
                           MAP_SHADOW_STACK))

PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_SHARED, MAP_PRIVATE, MAP_TYPE = 0x01, 0x02, 0x0F
MAP_FIXED, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE = 0x10, 0x20, 0x100000
MREMAP_FIXED, MREMAP_DONTUNMAP = 2, 4

CONTINUE = 0  # the call runs as asked
FULL = errno.ENOMEM  # the fence cannot hold the block (its bytes or blocks): it fails as memory that ran out
BRK_REFUSED = -1  # brk answered 0, not an errno: the C library reads it as a failure and asks the kernel afresh
QUARANTINE_BLOCKS = 1024  # driver.c's: freed blocks whose mappings stay
FREE_CALLS = 2  # the fence's mapping calls for one free: the block made inaccessible, and the quarantine's unmap of
# it later (counted at the free: an unmap names no block the ledger made, so any program could make one)

FileId = tuple[int, int]  # a file as the kernel knows it: (st_dev, st_ino)
FileOf = Callable[[int], FileId | None]  # the file a descriptor of the caller names now (None: none, or unreadable)
TextAt = Callable[[int, int], bytes | None]  # `length` bytes of the waiting caller's memory at an address (None: unread)


def max_map_count() -> int:
    """This machine's vm.max_map_count (the kernel's, the same for the driver), as driver.c reads it."""
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 65530


DEFAULT_MAP_COUNT = 65530  # the kernel's default vm.max_map_count


def fence_blocks(max_map_count: int) -> int:
    """The live blocks the fence may hold under vm.max_map_count (as driver.c's fence_reserve): the room beside
    the quarantine and the driver's own mappings, under the kernel's default however many more this machine allows,
    so that a design's blocks fail at the same count on every machine that keeps the default or more (56,314).
    Past it a block fails (NULL), so this is what a correct design may keep live: the most any correct one of the
    suites keeps is 35,002 (review 2's small_records, 5000 sequences live: tests/bench/heap_peak.py)."""
    maps = min(max_map_count, DEFAULT_MAP_COUNT)
    return maps - QUARANTINE_BLOCKS - 8192 if maps > QUARANTINE_BLOCKS + 9216 else 1024
_U64 = (1 << 64) - 1
STRAYS_PER_CALL = 64  # pages stray accesses may make accessible in one call: a memory error is shown by one
SINK_PAGES = 4  # driver.c's: past STRAYS_PER_CALL, the pages a call's strays land on, at most these mapped at once


@dataclass
class Ledger:
    """One run's ledger. `budget` bounds the bytes of live blocks (the driver's address-space limit allows
    them), `max_blocks` their number (the map count allows them); `fail_at`: the k-th grant from now is refused
    with ENOMEM (0: none), and every later grant of the same call too."""

    budget: int = 1 << 28
    max_blocks: int = 1 << 40
    fail_at: int = 0
    driver_regions: tuple[tuple[int, int], ...] = ()  # the driver's own memory, mapped before the handover: (start, length)
    window: tuple[FileId, int, int] | None = None  # the pool's window this call may map: (file, offset, length)
    next_window: tuple[FileId, int, int] | None = None  # the one the next call may map (expect_window)
    outside: int = 0  # live blocks mapped outside the span behind the heap's count, and their pages
    outside_pages: int = 0
    live: dict[int, int] = field(default_factory=dict)  # a live block's first page: its page count
    starts: list[int] = field(default_factory=list)  # the live blocks' first pages, sorted
    live_pages: int = 0
    granted_to: int = 0  # one past the last page ever granted: a grant lies above it, with a page between
    faulted: list[int] = field(default_factory=list)  # pages stray accesses made accessible, sorted
    call_strays: int = 0  # pages the current call's stray accesses made accessible (at most STRAYS_PER_CALL)
    call_kernel_strays: int = 0  # pages the kernel reached for the current call's system calls, kept (at most as many)
    sink: list[int] = field(default_factory=list)  # past that, the pages mapped now (at most SINK_PAGES), oldest first
    sunk: int = 0  # stray pages counted past a call's STRAYS_PER_CALL (the sink's, each counted as it is mapped)
    grants: int = 0  # in the current call (since call_started)
    asked: int = 0  # the current call's requests for a fresh place, however answered (granted, failed or FULL)
    frees: int = 0
    injected: bool = False  # the current call had an allocation failed by the grader
    fence_calls: int = 0  # the fence's own mapping calls in the run (never reset): FREE_CALLS for each free of a
    # block, one for each grant of one in the span; what its CPU allowance is earned by (run_cpu.MAPPING_CALL_CPU each)

    def call_started(self, fail_at: int = -1) -> None:
        """A new API call: its counts start at zero; `fail_at` as the request's (-1: unchanged)."""
        self.grants = self.frees = self.call_strays = self.call_kernel_strays = self.asked = 0
        self.injected = False
        self.window, self.next_window = self.next_window, None  # a window is the request's that carries it, or none
        if fail_at >= 0:
            self.fail_at = fail_at

    @property
    def live_blocks(self) -> int:
        return len(self.live) + self.outside

    @property
    def live_bytes(self) -> int:
        return (self.live_pages + self.outside_pages) * PAGE

    @property
    def strays(self) -> int:
        """The stray pages counted in the run: those kept, and the sink's."""
        return len(self.faulted) + self.sunk

    def expect_window(self, file: FileId, offset: int, length: int) -> None:
        """The next call (its request carries a pool) maps `length` bytes of the grader's memory file `file` at
        `offset`: that one mapping is the pool's, not a block."""
        self.next_window = (file, offset, length)

    def answer(self, nr: int, args: tuple[int, ...], file_of: FileOf | None = None,
               text_at: TextAt | None = None) -> int:
        """The answer to one system call: CONTINUE, the errno it fails with, or BRK_REFUSED; the ledger updated.
        Where the call was made plays no part: the submission's code can reach any instruction of the process.
        `file_of(fd)`: the file the caller's descriptor `fd` names, read only for a mapping of the window's shape.
        Any other call (the filter hands one over when an argument lies in the span) is the kernel's access to the
        caller's memory: `kernel_call` (`text_at`: the caller's memory, read only for a string in the span)."""
        if nr not in MAPPING_CALLS:
            return self.kernel_call(kernel_access.access(nr, args), text_at)
        if nr == MMAP:
            return self._mmap(*args[:6], file_of=file_of)
        if nr == BRK:
            return CONTINUE if args[0] == 0 else BRK_REFUSED
        if nr == MPROTECT:
            return self._mprotect(args[0], args[1], args[2])
        if nr == MUNMAP:
            if not _in_span(args[0], args[1]):
                return errno.EPERM  # the driver's memory, a pool or a block outside the span: none is unmapped
            first, end = _pages(args[0], args[1])
            if self._touches_live(first, end):
                return errno.EPERM
            self.sink = [page for page in self.sink if not first <= page < end]  # room for the sink's next page
            return CONTINUE
        if nr == MREMAP:
            old, old_len, new_len, flags, new = args[:5]
            into_span = flags & MREMAP_FIXED and _in_span(new, new_len)
            over_driver = flags & MREMAP_FIXED and self._drivers(new, new_len)
            if _in_span(old, max(old_len, 1)) or into_span or self._drivers(old, old_len) or over_driver:
                return errno.EPERM
            if flags & MREMAP_DONTUNMAP:
                return errno.EPERM  # a copy of the mapping's pages at a new place: memory no call counted
            return errno.ENOMEM if new_len > old_len else CONTINUE
        if nr == MADVISE:
            return errno.EPERM if _in_span(args[0], args[1]) or self._drivers(args[0], args[1]) else CONTINUE
        return errno.EPERM  # shmat, remap_file_pages, pkey_mprotect, map_shadow_stack: the driver needs none

    # ---- the calls ----

    def _mmap(self, addr: int, length: int, prot: int, flags: int, fd: int = _U64, offset: int = 0,
              file_of: FileOf | None = None) -> int:
        if prot & PROT_EXEC:
            return errno.EPERM  # no code but the program's own
        if not _in_span(addr, length):
            if flags & MAP_FIXED:
                return errno.EPERM  # it would replace the program's pages
            if self._window_shaped(addr, length, prot, flags, offset):
                assert self.window is not None
                file, self.window = self.window[0], None  # once: the pool is mapped, or it never will be
                named = file_of(fd & 0xFFFFFFFF) if file_of is not None else None  # the kernel reads an int
                return CONTINUE if named == file else errno.EBADF  # no pool on a file the grader does not read
            return self._outside_block(length)
        first, end = _pages(addr, length)
        if (flags & MAP_TYPE == MAP_PRIVATE and flags & MAP_ANONYMOUS and flags & MAP_FIXED_NOREPLACE
                and prot == PROT_READ | PROT_WRITE and addr % PAGE == 0):
            return self._grant(first, end)
        return self._protect(first, end, prot)

    def _window_shaped(self, addr: int, length: int, prot: int, flags: int, offset: int) -> bool:
        """Whether the mapping has the shape of the pool's window this call may map: a file's bytes where the grader
        put the pool, shared, read-write, placed by the kernel. Whose file it is, is the caller's (_mmap)."""
        return (self.window is not None and (offset, length) == self.window[1:] and addr == 0
                and flags & (MAP_TYPE | MAP_ANONYMOUS) == MAP_SHARED and prot == PROT_READ | PROT_WRITE)

    def _outside_block(self, length: int) -> int:
        """A mapping outside the span, not the driver's: a request for a block, answered as a grant's is (the
        countdown first, then the budget), and once made a live block for the rest of the run."""
        pages = _pages(0, length)[1]
        if (refused := self._requested(pages)) != CONTINUE:
            return refused
        self.grants += 1
        self.outside += 1
        self.outside_pages += pages
        return CONTINUE

    def _mprotect(self, addr: int, length: int, prot: int) -> int:
        if prot & PROT_EXEC or not _in_span(addr, length) or addr % PAGE:
            return errno.EPERM
        first, end = _pages(addr, length)
        if prot == 0 and self.live.get(first) == end - first:
            del self.live[first]  # a free: exactly one live block made inaccessible
            del self.starts[bisect.bisect_left(self.starts, first)]
            self.live_pages -= end - first
            self.frees += 1
            self.fence_calls += FREE_CALLS
            return CONTINUE
        return self._protect(first, end, prot)

    def _grant(self, first: int, end: int) -> int:
        if first <= self.granted_to or self._faulted_in(first, end):
            return errno.EEXIST  # not fresh: the driver moves on
        if (refused := self._requested(end - first)) != CONTINUE:
            return refused
        self.live[first] = end - first
        self.starts.append(first)  # above every page granted before: the list stays sorted
        self.live_pages += end - first
        self.granted_to = end
        self.grants += 1
        self.fence_calls += 1
        return CONTINUE

    def _requested(self, pages: int) -> int:
        """A request for a block of `pages` fresh pages, counted (`asked`): ENOMEM when the grader fails it, FULL
        when the fence cannot hold it, else CONTINUE. The failure countdown first, on every request, whatever the
        answer would be: a budget filled on purpose (review 10's budget_filled) once made every later request FULL,
        served by the C library, never failed."""
        self.asked += 1
        if self.injected:  # from the k-th on every request of the call fails: memory that ran out stays out
            return errno.ENOMEM
        if self.fail_at > 0:
            self.fail_at -= 1
            if self.fail_at == 0:
                self.injected = True
                return errno.ENOMEM
        if pages * PAGE + self.live_bytes > self.budget or self.live_blocks >= self.max_blocks:
            return FULL  # the allocation fails; nothing changes (an oversized request spends nothing)
        return CONTINUE

    def _protect(self, first: int, end: int, prot: int) -> int:
        """Any other change to pages of the span: refused on a live block's pages; inaccessible is harmless;
        accessible is a stray access, each page counted once, at most STRAYS_PER_CALL pages kept a call (the
        driver's fault handler asks for one page at a time). Past that, one page at a time is the sink's, counted,
        while fewer than SINK_PAGES are mapped (the driver unmaps the oldest first), else refused: what the ledger
        keeps is bounded by the calls the grader makes, not by what the submission asks."""
        if self._touches_live(first, end) or (prot != 0 and end - first > STRAYS_PER_CALL):
            return errno.EPERM
        if prot != 0:
            new = [page for page in range(first, end) if not self._faulted_in(page, page + 1)]
            if self.call_strays + len(new) > STRAYS_PER_CALL:
                if len(new) != 1 or len(self.sink) >= SINK_PAGES:
                    return errno.EPERM
                self.sink.append(new[0])
                self.sunk += 1
                return CONTINUE
            self.call_strays += len(new)
            for page in new:
                bisect.insort(self.faulted, page)
        return CONTINUE

    def kernel_call(self, access: kernel_access.Access, text_at: TextAt | None = None) -> int:
        """A system call handed over because a register lies in the span, judged whole (`access`: what its registers
        name, kernel_access.py): each range as `kernel_access` judges it; each string in the span to its NUL, read
        by the grader from the waiting caller's memory (`text_at`) on live and counted pages only, at most the
        kernel's bound: where it runs off them before its NUL, the next byte is the kernel's (its page a stray).
        CONTINUE when every register in the span was judged so; EPERM when one cannot be (a value, a register of
        a call the table does not know, a string the grader could not read): the call does not run, and such a
        register is judged as an address by its first byte (the program handed the kernel a heap address: on a
        page of no live block it is a stray, as review 16's sched_setparam and pread of /proc/self/mem past a
        block are). A live block's address in a refused call costs nothing but the refusal."""
        named, refused = list(access.ranges), False
        for start, most in access.texts:
            if _in_span(start, 1):
                length = self._text_length(start, most, text_at)
                refused |= length is None
                named.append((start, length or 1))
        unjudged = [(value, 1) for value in access.values if _in_span(value, 1)]
        self.kernel_access(named + unjudged)
        return errno.EPERM if refused or unjudged else CONTINUE

    def _text_length(self, start: int, most: int, text_at: TextAt | None) -> int | None:
        """The bytes the kernel reads of the string at `start` (at most `most`, the NUL included): read only where
        the caller's pages are a live block's or counted ones (the kernel reads on there); None when the grader
        cannot read them."""
        first, end = _pages(start, most)
        readable = min(self._reachable(first, end) * PAGE, start + most) - start
        if readable <= 0:
            return 1  # its first byte is on a page no live block holds: where the kernel's read stops
        data = text_at(start, readable) if text_at is not None else None
        if data is None or len(data) != readable:
            return None
        if (nul := data.find(0)) >= 0:
            return nul + 1
        return readable if readable == most else readable + 1

    def kernel_access(self, ranges: list[tuple[int, int]]) -> int:
        """A system call's access to the caller's memory, made by the kernel (`ranges`: start, length; those outside
        the span are none of the fence's): in each range, the first page of the span that is no live block's and no
        page counted before is where the kernel's copy stops (EFAULT, and no signal the driver sees), and is counted
        as a stray, as a fault's page is (`strays`: the same count, the same words for the student). The walk over a
        range passes live blocks and counted pages only, so its work is bounded by what the ledger holds, not by
        the length."""
        for start, length in ranges:
            if not _in_span(start, length):
                continue
            first, end = _pages(max(start, SPAN_START), min(start + length, SPAN_END) - max(start, SPAN_START))
            if (page := self._reachable(first, end)) < end:
                self._count_stray(page)
        return CONTINUE

    def _reachable(self, first: int, end: int) -> int:
        """The first page in [first, end) that is no live block's and was not counted before (`end` when none):
        where the kernel's copy from `first` on stops."""
        page = first
        while page < end:
            at = bisect.bisect_right(self.starts, page)
            if at > 0 and self.starts[at - 1] + self.live[self.starts[at - 1]] > page:
                page = self.starts[at - 1] + self.live[self.starts[at - 1]]  # past the live block
            elif self._faulted_in(page, page + 1):
                page += 1  # counted before (and mapped for the fault): the kernel reads on
            else:
                return page
        return end

    def _count_stray(self, page: int) -> None:
        """One page the kernel's access reached outside any live block: kept as a fault's page is, while the call
        has room (STRAYS_PER_CALL of the kernel's, apart from the faults' room, which the driver counts alike: its
        sink, driver_heap.c), else counted as the sink's are (none is mapped: the kernel's copy maps nothing)."""
        if self.call_kernel_strays < STRAYS_PER_CALL:
            self.call_kernel_strays += 1
            bisect.insort(self.faulted, page)
        else:
            self.sunk += 1

    # ---- pages ----

    def _touches_live(self, first: int, end: int) -> bool:
        """Whether a live block has a page in [first, end)."""
        at = bisect.bisect_left(self.starts, end)  # the blocks that start before `end`
        return at > 0 and self.starts[at - 1] + self.live[self.starts[at - 1]] > first

    def _drivers(self, addr: int, length: int) -> bool:
        """Whether [addr, addr + length) touches the driver's own memory (mapped before the handover)."""
        return any(_overlaps(addr, length, start, size) for start, size in self.driver_regions)

    def _faulted_in(self, first: int, end: int) -> bool:
        at = bisect.bisect_left(self.faulted, first)
        return (at < len(self.faulted) and self.faulted[at] < end) or any(first <= page < end for page in self.sink)


def _overlaps(addr: int, length: int, start: int, size: int) -> bool:
    return addr < start + size and min(addr + max(length, 1), _U64) > start


def _pages(addr: int, length: int) -> tuple[int, int]:
    """The pages [first, end) that [addr, addr + length) touches."""
    end = min(addr + max(length, 1), 1 << 64)
    return addr // PAGE, (end + PAGE - 1) // PAGE


def _in_span(addr: int, length: int) -> bool:
    return addr < SPAN_END and min(addr + max(length, 1), _U64) > SPAN_START
