"""The heap's page ledger (oracle/native/ledger.py) on plain values: which system call it lets run, which it
refuses and with what, and what it counts. No process: the answers a driver's calls would get."""

import errno

from oracle.native.ledger import (
    BRK, BRK_REFUSED, CONTINUE, FREE_CALLS, FULL, MADVISE, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MMAP, MPROTECT,
    MREMAP, MREMAP_DONTUNMAP, MREMAP_FIXED, MUNMAP, PAGE, PKEY_MPROTECT, PROT_EXEC, PROT_READ, PROT_WRITE, SHMAT, SINK_PAGES, SPAN_START, STRAYS_PER_CALL,
    Ledger,
    fence_blocks,
)

RW = PROT_READ | PROT_WRITE
GRANT = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE


def page(n: int) -> int:
    return SPAN_START + n * PAGE


def grant(ledger: Ledger, first: int, pages: int = 1) -> int:
    return ledger.answer(MMAP, (page(first), pages * PAGE, RW, GRANT, 2**64 - 1, 0))


def free(ledger: Ledger, first: int, pages: int = 1) -> int:
    return ledger.answer(MPROTECT, (page(first), pages * PAGE, 0, 0, 0, 0))


def test_a_grant_of_fresh_pages_is_a_live_block_counted_in_its_call() -> None:
    ledger = Ledger()
    ledger.call_started()
    assert grant(ledger, 1, 2) == CONTINUE
    assert (ledger.grants, ledger.live_blocks, ledger.live_bytes) == (1, 1, 2 * PAGE)
    ledger.call_started()
    assert (ledger.grants, ledger.live_blocks) == (0, 1)  # the call's count starts again; the live blocks stay


def test_a_free_is_exactly_one_live_block_made_inaccessible() -> None:
    ledger = Ledger()
    grant(ledger, 1, 2)
    assert free(ledger, 1, 1) == errno.EPERM  # part of a block: refused, nothing freed
    assert free(ledger, 2, 1) == errno.EPERM
    assert ledger.live_blocks == 1 and ledger.frees == 0
    assert free(ledger, 1, 2) == CONTINUE
    assert (ledger.frees, ledger.live_blocks, ledger.live_bytes) == (1, 0, 0)
    assert free(ledger, 1, 2) == CONTINUE  # again: nothing live there, no second free counted
    assert ledger.frees == 1


def test_no_page_is_granted_twice_nor_next_to_the_last_block() -> None:
    ledger = Ledger()
    grant(ledger, 5)
    free(ledger, 5)
    assert grant(ledger, 5) == errno.EEXIST  # a freed block's page, to a dangling pointer's new owner: never
    assert grant(ledger, 3) == errno.EEXIST  # below a page granted before
    assert grant(ledger, 6) == errno.EEXIST  # no guard page between it and the last block
    assert grant(ledger, 7) == CONTINUE
    assert ledger.grants == 2


def test_a_grant_must_be_private_anonymous_read_write_and_not_replace() -> None:
    ledger = Ledger()
    for flags, prot in ((MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, RW),
                        (MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, RW),
                        (GRANT, PROT_READ)):
        ledger.answer(MMAP, (page(1), PAGE, prot, flags, 0, 0))
    assert ledger.grants == 0 and ledger.live_blocks == 0
    assert len(ledger.faulted) == 1  # each made page 1 accessible outside a grant: one stray page


def test_a_page_made_accessible_outside_a_grant_is_a_stray_access_counted_once() -> None:
    ledger = Ledger()
    grant(ledger, 1)
    assert ledger.answer(MPROTECT, (page(2), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE  # the guard after it, readable
    assert ledger.answer(MMAP, (page(2), PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, 0, 0)) == CONTINUE
    assert ledger.faulted == [page(2) // PAGE]
    assert ledger.answer(MPROTECT, (page(10), 65 * PAGE, PROT_READ, 0, 0, 0)) == errno.EPERM  # no fault is that big
    assert ledger.faulted == [page(2) // PAGE]
    assert grant(ledger, 3) == CONTINUE  # a faulted guard is no live block


def test_stray_pages_are_at_most_64_a_call_and_the_sinks_so_the_ledger_stays_bounded() -> None:
    """However many pages a call asks to make accessible (review4's stray_page_flood: 40,000 requests a call), the
    ledger keeps at most STRAYS_PER_CALL of them a call, then SINK_PAGES more (the sink's, none unmapped here), and
    refuses the rest; a page already counted costs nothing."""
    ledger = Ledger()
    ledger.call_started()
    answers = [ledger.answer(MPROTECT, (page(100 + 2 * n), PAGE, PROT_READ, 0, 0, 0)) for n in range(1000)]
    kept = STRAYS_PER_CALL + SINK_PAGES
    assert answers == [CONTINUE] * kept + [errno.EPERM] * (1000 - kept)
    assert (len(ledger.faulted), len(ledger.sink), ledger.strays) == (STRAYS_PER_CALL, SINK_PAGES, kept)
    assert ledger.answer(MPROTECT, (page(100), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE  # counted already
    ledger.call_started()
    assert ledger.answer(MPROTECT, (page(5000), 64 * PAGE, PROT_READ, 0, 0, 0)) == CONTINUE  # a new call's 64
    assert ledger.answer(MPROTECT, (page(6000), PAGE, PROT_READ, 0, 0, 0)) == errno.EPERM  # the sink is full
    assert len(ledger.faulted) == 2 * STRAYS_PER_CALL


def test_past_64_a_call_each_stray_page_is_the_sinks_counted_while_the_oldest_is_unmapped_first() -> None:
    """A runaway loop (driver.c's sink_make_room): past STRAYS_PER_CALL each new page is counted and kept among at
    most SINK_PAGES; an unmap of the oldest makes room for the next, a page of the sink is counted once while mapped,
    and a grant over one is refused (the kernel would: it is mapped) until it is unmapped."""
    ledger = Ledger()
    ledger.call_started()
    assert ledger.answer(MPROTECT, (page(1000), 64 * PAGE, PROT_READ, 0, 0, 0)) == CONTINUE
    for n in range(100):  # 100 pages past the 64, the oldest sink page unmapped before each new one
        if len(ledger.sink) == SINK_PAGES:
            assert ledger.answer(MUNMAP, (ledger.sink[0] * PAGE, PAGE, 0, 0, 0, 0)) == CONTINUE
        stray = page(2000 + 2 * n)
        assert ledger.answer(MPROTECT, (stray, PAGE, PROT_READ, 0, 0, 0)) == CONTINUE
        assert ledger.answer(MMAP, (stray, PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, 0, 0)) == CONTINUE
    assert (len(ledger.faulted), ledger.sunk, ledger.strays) == (64, 100, 164)
    assert ledger.sink == [page(2000 + 2 * n) // PAGE for n in range(96, 100)]
    assert ledger.answer(MPROTECT, (page(2198), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE  # mapped: counted once
    assert ledger.answer(MPROTECT, (page(5000), PAGE, PROT_READ, 0, 0, 0)) == errno.EPERM  # no room: not unmapped
    assert ledger.strays == 164
    assert grant(ledger, 2198) == errno.EEXIST  # a sink page is mapped
    assert grant(ledger, 2199) == CONTINUE
    ledger.call_started()  # a new call's strays are kept again, the sink's pages stay the sink's
    assert ledger.answer(MPROTECT, (page(3000), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE
    assert (len(ledger.faulted), len(ledger.sink)) == (65, SINK_PAGES)


def test_a_grant_over_a_stray_page_is_refused_as_the_kernel_would() -> None:
    ledger = Ledger()
    ledger.answer(MMAP, (page(4), PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, 0, 0))
    assert grant(ledger, 3, 2) == errno.EEXIST
    assert grant(ledger, 5) == CONTINUE


def test_a_live_blocks_pages_cannot_be_changed_otherwise() -> None:
    ledger = Ledger()
    grant(ledger, 1, 3)
    for nr, args in ((MPROTECT, (page(2), PAGE, PROT_READ, 0, 0, 0)),
                     (MPROTECT, (page(1), 3 * PAGE, RW | PROT_EXEC, 0, 0, 0)),
                     (MUNMAP, (page(3), PAGE, 0, 0, 0, 0)),
                     (MMAP, (page(2), PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, 0, 0)),
                     (MADVISE, (page(1), PAGE, 4, 0, 0, 0)),
                     (MREMAP, (page(1), 3 * PAGE, 4 * PAGE, 1, 0, 0))):
        assert ledger.answer(nr, args) == errno.EPERM, (nr, args)
    assert (ledger.live_blocks, ledger.live_bytes, ledger.faulted) == (1, 3 * PAGE, [])


def test_injection_fails_the_kth_grant_and_every_later_one_of_the_call_and_says_so() -> None:
    """Memory that ran out stays out for the rest of the call: a call that asks again gets ENOMEM again (review
    7's malloc_twice asked malloc twice and so never met its unchecked path); the next call is granted."""
    ledger = Ledger()
    ledger.call_started(fail_at=2)
    assert grant(ledger, 1) == CONTINUE and not ledger.injected
    assert grant(ledger, 3) == errno.ENOMEM and ledger.injected
    assert grant(ledger, 3) == errno.ENOMEM and grant(ledger, 5) == errno.ENOMEM  # asked again: out still
    assert (ledger.grants, ledger.live_blocks) == (1, 1)
    ledger.call_started()
    assert not ledger.injected
    assert grant(ledger, 3) == CONTINUE and (ledger.grants, ledger.live_blocks) == (1, 2)


def test_a_block_past_the_budget_fails_as_memory_that_ran_out_and_spends_nothing() -> None:
    """Review 10's overread_past_budget: a block past the budget was served by the C library, with no guard page
    after it. It fails (ENOMEM, not the grader's injection) and changes nothing: a block that fits is granted."""
    ledger = Ledger(budget=4 * PAGE)
    ledger.call_started()
    assert grant(ledger, 1, 3) == CONTINUE
    assert grant(ledger, 5, 2) == FULL == errno.ENOMEM and not ledger.injected
    assert (ledger.grants, ledger.live_blocks, ledger.live_bytes, ledger.granted_to) == (1, 1, 3 * PAGE, page(4) // PAGE)
    assert grant(ledger, 5, 1) == CONTINUE
    assert ledger.grants == 2 and ledger.asked == 3


def test_injection_comes_before_the_budget_so_a_budget_filled_on_purpose_fails_the_kth_request_all_the_same() -> None:
    """Review 10's budget_filled: a block as large as the budget kept live made every later request FULL (then served
    by the C library, never failed). The countdown runs first on every request for a fresh place, and counts it."""
    ledger = Ledger(budget=4 * PAGE)
    assert grant(ledger, 1, 4) == CONTINUE  # the reserve: the budget is spent
    ledger.call_started(fail_at=2)
    assert grant(ledger, 6) == FULL and not ledger.injected  # the first request: past the budget
    assert grant(ledger, 6) == errno.ENOMEM and ledger.injected  # the second: failed, FULL or not
    assert grant(ledger, 6) == errno.ENOMEM
    assert (ledger.asked, ledger.grants) == (3, 0)
    assert grant(ledger, 1) == errno.EEXIST and ledger.asked == 3  # no fresh place: not a request, not counted


TABLE, REPLY = 0x7F1234500000, 0x7F1234A00000  # the driver's own memory, mapped before the handover (its places)
TABLE_SIZE, REPLY_SIZE = 5 << 20, 4096 + 16
ANON = MAP_PRIVATE | MAP_ANONYMOUS
NO_FD = 2**64 - 1
POOLS_FD, OFFSET = 5, 3 * PAGE  # the grader's memory file as the driver holds it, and where the grader put a pool
POOLS_FILE = (1, 1735)  # that file as the kernel knows it (st_dev, st_ino)
FILES = {POOLS_FD: POOLS_FILE, 6: (44, 4)}  # the files the driver's descriptors name


def handed_over() -> Ledger:
    """A ledger as the driver's handover makes it: the places of the driver's own memory, mapped before."""
    return Ledger(driver_regions=((TABLE, TABLE_SIZE), (REPLY, REPLY_SIZE)))


def window(length: int = 3 * PAGE, fd: int = POOLS_FD, offset: int = OFFSET, flags: int = MAP_SHARED,
           addr: int = 0, prot: int = RW) -> tuple[int, ...]:
    return (addr, length, prot, flags, fd, offset)


def test_outside_the_span_the_programs_own_memory_runs_but_no_code_nor_replacement() -> None:
    ledger = handed_over()
    assert ledger.answer(MMAP, (0, PAGE, RW | PROT_EXEC, ANON, NO_FD, 0)) == errno.EPERM
    assert ledger.answer(MMAP, (0x400000, PAGE, RW, ANON | MAP_FIXED, NO_FD, 0)) == errno.EPERM  # over the program
    assert ledger.answer(MPROTECT, (0x400000, PAGE, RW, 0, 0, 0)) == errno.EPERM  # the program's code writable
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, 2 * PAGE, 1 | MREMAP_FIXED, page(9), 0)) == errno.EPERM
    assert ledger.live_blocks == 0 and ledger.grants == 0
    assert ledger.answer(SHMAT, (3, 0, 0, 0, 0, 0)) == errno.EPERM
    assert ledger.answer(PKEY_MPROTECT, (page(1), PAGE, RW, 0, 0, 0)) == errno.EPERM
    assert ledger.answer(MMAP, (page(1), PAGE, RW, ANON, 0, 0)) == CONTINUE  # a hint into the span: a stray page
    assert ledger.faulted == [page(1) // PAGE] and ledger.grants == 0


def test_a_mapping_outside_the_span_is_a_block_that_stays_live_whoever_made_it() -> None:
    """Review 12's sequences_on_the_drivers_pages: the ledger took every mapping made from the driver's own system
    call instruction (learnt at the first mapping call after the handover) for the driver's, and the submission
    called that instruction. No call is told by where it was made: the first mapping after the handover, the same
    call again, are each a block of the call's, live for the rest of the run (no unmapping outside the span)."""
    ledger = handed_over()
    ledger.call_started()
    assert ledger.answer(MMAP, (0, PAGE, RW, ANON, NO_FD, 0)) == CONTINUE  # the first, as the driver's would be
    assert ledger.answer(MMAP, (0, 3 * PAGE - 1, RW, ANON, NO_FD, 0)) == CONTINUE
    assert (ledger.grants, ledger.asked, ledger.live_blocks, ledger.live_bytes) == (2, 2, 2, 4 * PAGE)
    assert ledger.answer(MUNMAP, (0x7F0000000000, 3 * PAGE, 0, 0, 0, 0)) == errno.EPERM  # not its to unmap
    assert ledger.answer(MMAP, (0x7F0000000000, PAGE, PROT_READ, MAP_PRIVATE, 3, 0)) == CONTINUE  # a hint, a file
    ledger.call_started()
    assert (ledger.grants, ledger.live_blocks, ledger.live_bytes) == (0, 3, 5 * PAGE)  # live for the rest of the run


def test_the_pools_window_is_told_by_what_it_maps_once_in_the_call_that_carries_it() -> None:
    """The one mapping the driver makes after the handover: MAP_SHARED of the grader's memory file, read-write,
    at the offset and length the grader gave for the request (expect_window), placed by the kernel. Any other
    mapping, one differing in any of these, or the same one again, is a block of the call's. (Whose file the
    descriptor names, whatever its number: tests/test_ledger_window.py.)"""
    ledger = handed_over()
    ledger.expect_window(POOLS_FILE, OFFSET, 3 * PAGE)
    assert ledger.answer(MMAP, window(), FILES.get) == CONTINUE and ledger.live_blocks == 1  # before its request
    ledger.call_started()
    for other in (window(length=4 * PAGE), window(offset=0), window(flags=MAP_PRIVATE),
                  window(flags=MAP_SHARED | MAP_ANONYMOUS), window(addr=0x7F0000000000), window(prot=PROT_READ)):
        assert ledger.answer(MMAP, other, FILES.get) == CONTINUE
    assert (ledger.grants, ledger.live_blocks) == (6, 7)
    assert ledger.answer(MMAP, window(), FILES.get) == CONTINUE and (ledger.grants, ledger.live_blocks) == (6, 7)
    assert ledger.answer(MMAP, window(), FILES.get) == CONTINUE and (ledger.grants, ledger.live_blocks) == (7, 8)  # once
    ledger.expect_window(POOLS_FILE, OFFSET, 3 * PAGE)
    ledger.call_started()
    ledger.call_started()  # a request that did not map it: the window is gone with its call
    assert ledger.answer(MMAP, window(), FILES.get) == CONTINUE and ledger.live_blocks == 9
    ledger.expect_window(POOLS_FILE, OFFSET, 3 * PAGE)
    ledger.call_started(fail_at=1)
    assert ledger.answer(MMAP, window((1 << 31) + 2 * PAGE), FILES.get) == errno.ENOMEM  # another size: a block, failed
    assert ledger.injected and ledger.live_blocks == 9
    assert ledger.answer(MMAP, window(fd=POOLS_FD | 0xFFFFFFFF00000000), FILES.get) == CONTINUE  # the int passed
    assert ledger.live_blocks == 9 and ledger.window is None  # the pool, mapped though the call failed a block


def test_a_mapping_outside_the_span_is_failed_in_turn_and_past_the_budget_as_a_grant_is() -> None:
    """Review 12's l2_tables_on_the_drivers_pages: an L2 table on a page mapped outside the span was never failed
    ("10 allocations failed one at a time", none an L2 table's). A mapping outside the span is a request for a
    block: the countdown runs on it as on the span's grants, and one the fence cannot hold is FULL."""
    ledger = Ledger(budget=4 * PAGE, driver_regions=((TABLE, TABLE_SIZE),))
    ledger.call_started(fail_at=2)
    assert grant(ledger, 1) == CONTINUE
    assert ledger.answer(MMAP, (0, PAGE, RW, ANON, NO_FD, 0)) == errno.ENOMEM and ledger.injected
    assert grant(ledger, 3) == errno.ENOMEM  # memory that ran out stays out, in the span and outside it
    assert (ledger.asked, ledger.grants, ledger.live_blocks) == (3, 1, 1)
    ledger.call_started()
    assert ledger.answer(MMAP, (0, 4 * PAGE, RW, ANON, NO_FD, 0)) == FULL and not ledger.injected  # past the budget
    assert ledger.answer(MMAP, (0, 3 * PAGE, RW, ANON, NO_FD, 0)) == CONTINUE
    assert (ledger.asked, ledger.grants, ledger.live_bytes) == (2, 1, 4 * PAGE)
    assert grant(ledger, 5) == FULL
    ledger.max_blocks = 2
    assert ledger.answer(MMAP, (0, 0, RW, ANON, NO_FD, 0)) == FULL  # the block count reached, outside blocks counted


def test_the_drivers_own_memory_is_neither_unmapped_remapped_nor_advised_after_the_handover() -> None:
    """The driver's table and reply buffer, mapped before the handover, are known by their places: no call may
    unmap, move, shrink, copy (MREMAP_DONTUNMAP) or advise them, nor remap anything over them. Nor may any
    mapping be copied so: its pages at a second place would be memory no call counted."""
    ledger = handed_over()
    for start, size in ((TABLE, TABLE_SIZE), (REPLY, REPLY_SIZE)):
        middle = start + PAGE
        for nr, args in ((MUNMAP, (start, size, 0, 0, 0, 0)), (MUNMAP, (middle, PAGE, 0, 0, 0, 0)),
                         (MREMAP, (start, size, PAGE, 0, 0, 0)),  # shrunk
                         (MREMAP, (middle, PAGE, PAGE, 1 | MREMAP_FIXED, 0x7F0000000000, 0)),  # moved away
                         (MREMAP, (start, size, size, 1 | MREMAP_DONTUNMAP, 0, 0)),  # copied
                         (MREMAP, (0x7F0000000000, PAGE, PAGE, 1 | MREMAP_FIXED, middle, 0)),  # another over it
                         (MADVISE, (middle, PAGE, 4, 0, 0, 0)),  # MADV_DONTNEED: its pages zeroed
                         (MPROTECT, (middle, PAGE, PROT_READ, 0, 0, 0)),
                         (MMAP, (middle, PAGE, RW, ANON | MAP_FIXED, NO_FD, 0))):
            assert ledger.answer(nr, args) == errno.EPERM, (nr, args)
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, PAGE, 1 | MREMAP_DONTUNMAP, 0, 0)) == errno.EPERM
    assert ledger.answer(MREMAP, (0x7F0000000000, 2 * PAGE, PAGE, 0, 0, 0)) == CONTINUE  # a block shrunk: still live
    assert ledger.answer(MADVISE, (0x7F0000000000, PAGE, 4, 0, 0, 0)) == CONTINUE
    assert ledger.live_blocks == 0


def the_c_library_heap_may_not_grow(ledger: Ledger) -> None:
    assert ledger.answer(BRK, (0, 0, 0, 0, 0, 0)) == CONTINUE  # where the break is: a question
    assert ledger.answer(BRK, (0x5555_5560_0000, 0, 0, 0, 0, 0)) == BRK_REFUSED
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, 2 * PAGE, 1, 0, 0)) == errno.ENOMEM
    assert ledger.answer(MREMAP, (0x7F0000000000, 2 * PAGE, PAGE, 0, 0, 0)) == CONTINUE  # shrinking
    blocks, size = ledger.live_blocks, ledger.live_bytes
    assert ledger.answer(MMAP, (0, 1 << 20, RW, ANON, NO_FD, 0)) == CONTINUE  # the heap's own mapping
    assert ledger.answer(MUNMAP, (0x7F0000000000, 1 << 20, 0, 0, 0, 0)) == errno.EPERM
    assert (ledger.live_blocks, ledger.live_bytes) == (blocks + 1, size + (1 << 20))  # a block of the call's, live


def test_the_heap_of_the_c_library_may_not_grow_nor_map_uncounted_whatever_the_ledger_answered() -> None:
    """Review 10's ledger_spent: once the ledger answered FULL it took every later mapping call for the driver's own
    or the C library's heap's, so a mapping reached by address went uncounted. A FULL answer changes nothing: brk may
    not grow, nor a mapping by mremap, and a mapping outside the span is a live block, before a FULL answer and
    after one (an oversized request included)."""
    ledger = handed_over()
    ledger.budget = 4 << 20
    the_c_library_heap_may_not_grow(ledger)
    assert ledger.answer(MMAP, (page(1), 1 << 38, RW, GRANT, 2**64 - 1, 0)) == FULL  # far past the budget
    assert ledger.answer(MMAP, (0, 1 << 38, RW, ANON, NO_FD, 0)) == FULL  # outside the span too
    assert ledger.live_blocks == 1
    the_c_library_heap_may_not_grow(ledger)


def test_the_block_count_reached_fails_a_block_as_the_budget_does_until_one_is_freed() -> None:
    ledger = Ledger(max_blocks=2)
    assert grant(ledger, 1) == CONTINUE and grant(ledger, 3) == CONTINUE
    assert grant(ledger, 5) == FULL and not ledger.injected and ledger.live_blocks == 2
    assert free(ledger, 1) == CONTINUE and grant(ledger, 5) == CONTINUE


def test_the_fence_holds_the_blocks_the_default_map_count_leaves_on_any_machine() -> None:
    assert fence_blocks(65530) == 65530 - 1024 - 8192  # driver.c's fence_reserve
    assert fence_blocks(10000) == 1024
    assert fence_blocks(1048576) == fence_blocks(65530)  # a machine that allows more: the same count, the same grade


def test_only_the_fences_grants_and_frees_earn_its_cpu_allowance() -> None:
    """Review 16's system_time_bought: the fence's CPU allowance (run_cpu.MAPPING_CALL_CPU each) is earned by its
    own work alone, one for a grant of a block the ledger made, FREE_CALLS for a free of one (its quarantine's unmap
    later included); a mapping call of the program's own earns nothing, answered or refused: an advice or an unmap of
    a page nobody maps, a page made inaccessible that is no block, a mapping outside the span, a stray page, a grant
    refused, a free of a block already freed."""
    ledger = handed_over()
    for call in ((MADVISE, (0x1000, PAGE, 0, 0, 0, 0)), (MADVISE, (page(9), PAGE, 0, 0, 0, 0)),
                 (MUNMAP, (page(9), PAGE, 0, 0, 0, 0)), (MPROTECT, (page(9), PAGE, 0, 0, 0, 0)),
                 (MMAP, (0, PAGE, RW, ANON, NO_FD, 0)), (MPROTECT, (page(11), PAGE, PROT_READ, 0, 0, 0)),
                 (BRK, (0, 0, 0, 0, 0, 0)), (PKEY_MPROTECT, (page(9), PAGE, RW, 0, 0, 0))):
        ledger.answer(*call)
    assert ledger.fence_calls == 0 and ledger.outside == 1 and ledger.strays == 1
    assert grant(ledger, 1, 2) == CONTINUE and ledger.fence_calls == 1
    assert grant(ledger, 1) == errno.EEXIST and ledger.fence_calls == 1  # refused: not fresh
    assert free(ledger, 1, 2) == CONTINUE and ledger.fence_calls == 1 + FREE_CALLS
    assert free(ledger, 1, 2) == CONTINUE and ledger.fence_calls == 1 + FREE_CALLS  # nothing live there: no free
    ledger.call_started()
    assert ledger.fence_calls == 1 + FREE_CALLS  # the run's count: a new call does not reset it
