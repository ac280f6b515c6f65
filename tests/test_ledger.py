"""The heap's page ledger (oracle/native/ledger.py) on plain values: which system call it lets run, which it
refuses and with what, and what it counts. No process: the answers a driver's calls would get."""

import errno

from oracle.native.ledger import (
    BRK, BRK_REFUSED, CONTINUE, FULL, MADVISE, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MMAP, MPROTECT,
    MREMAP, MREMAP_FIXED, MUNMAP, PAGE, PKEY_MPROTECT, PROT_EXEC, PROT_READ, PROT_WRITE, SHMAT, SINK_PAGES, SPAN_START, STRAYS_PER_CALL,
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


DRIVER, LIBC = 0x555555556789, 0x7FFFF7E9A123  # the instructions a driver's own call and the C library's are made at
ANON = MAP_PRIVATE | MAP_ANONYMOUS


def registered() -> Ledger:
    """A ledger whose first mapping call (the driver's, before any submission code) named the driver's instruction."""
    ledger = Ledger()
    assert ledger.answer(MMAP, (0, PAGE, RW, ANON, 2**64 - 1, 0), DRIVER) == CONTINUE
    assert ledger.driver_site == DRIVER and ledger.live_blocks == 0
    return ledger


def test_outside_the_span_the_programs_own_memory_runs_but_no_code_nor_replacement() -> None:
    ledger = registered()
    anon = ANON
    assert ledger.answer(MMAP, (0, 1 << 20, RW, anon, 2**64 - 1, 0), DRIVER) == CONTINUE  # the driver's own, a pool
    assert ledger.answer(MUNMAP, (0x7F0000000000, 1 << 20, 0, 0, 0, 0), DRIVER) == CONTINUE
    assert ledger.answer(MMAP, (0, PAGE, RW | PROT_EXEC, anon, 0, 0), DRIVER) == errno.EPERM
    assert ledger.answer(MMAP, (0x400000, PAGE, RW, anon | MAP_FIXED, 0, 0), DRIVER) == errno.EPERM  # over the program
    assert ledger.answer(MPROTECT, (0x400000, PAGE, RW, 0, 0, 0), DRIVER) == errno.EPERM  # the program's code writable
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, 2 * PAGE, 1 | MREMAP_FIXED, page(9), 0)) == errno.EPERM
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, 2 * PAGE, 1, 0, 0), DRIVER) == CONTINUE
    assert ledger.live_blocks == 0 and ledger.grants == 0
    assert ledger.answer(SHMAT, (3, 0, 0, 0, 0, 0)) == errno.EPERM
    assert ledger.answer(PKEY_MPROTECT, (page(1), PAGE, RW, 0, 0, 0)) == errno.EPERM
    assert ledger.answer(MMAP, (page(1), PAGE, RW, anon, 0, 0)) == CONTINUE  # a hint into the span: a stray page
    assert ledger.faulted == [page(1) // PAGE] and ledger.grants == 0


def test_a_mapping_outside_the_span_from_elsewhere_is_a_block_that_stays_live() -> None:
    ledger = registered()
    ledger.call_started()
    assert ledger.answer(MMAP, (0, 3 * PAGE - 1, RW, ANON, 2**64 - 1, 0), LIBC) == CONTINUE  # mmap reached by address
    assert (ledger.grants, ledger.live_blocks, ledger.live_bytes) == (1, 1, 3 * PAGE)
    assert ledger.answer(MUNMAP, (0x7F0000000000, 3 * PAGE, 0, 0, 0, 0), LIBC) == errno.EPERM  # not its to unmap
    assert ledger.answer(MMAP, (0x7F0000000000, PAGE, PROT_READ, MAP_PRIVATE, 3, 0), LIBC) == CONTINUE  # a hint, a file
    ledger.call_started()
    assert (ledger.grants, ledger.live_blocks, ledger.live_bytes) == (0, 2, 4 * PAGE)  # live for the rest of the run


def the_c_library_heap_may_not_grow(ledger: Ledger) -> None:
    assert ledger.answer(BRK, (0, 0, 0, 0, 0, 0), LIBC) == CONTINUE  # where the break is: a question
    assert ledger.answer(BRK, (0x5555_5560_0000, 0, 0, 0, 0, 0), LIBC) == BRK_REFUSED
    assert ledger.answer(MREMAP, (0x7F0000000000, PAGE, 2 * PAGE, 1, 0, 0), LIBC) == errno.ENOMEM
    assert ledger.answer(MREMAP, (0x7F0000000000, 2 * PAGE, PAGE, 0, 0, 0), LIBC) == CONTINUE  # shrinking
    blocks, size = ledger.live_blocks, ledger.live_bytes
    assert ledger.answer(MMAP, (0, 1 << 20, RW, ANON, 2**64 - 1, 0), LIBC) == CONTINUE  # the heap's own mapping
    assert ledger.answer(MUNMAP, (0x7F0000000000, 1 << 20, 0, 0, 0, 0), LIBC) == errno.EPERM
    assert (ledger.live_blocks, ledger.live_bytes) == (blocks + 1, size + (1 << 20))  # a block of the call's, live


def test_the_heap_of_the_c_library_may_not_grow_nor_map_uncounted_whatever_the_ledger_answered() -> None:
    """Review 10's ledger_spent: once the ledger answered FULL it took every later mapping call for the driver's own
    or the C library's heap's, so a mapping reached by address went uncounted. A FULL answer changes nothing: brk may
    not grow, nor a mapping by mremap, and a mapping made from anywhere but the driver's own instruction is a live
    block, before a FULL answer and after one (an oversized request included)."""
    ledger = registered()
    ledger.budget = 2 * PAGE
    assert ledger.answer(BRK, (0x5555_5560_0000, 0, 0, 0, 0, 0), DRIVER) == CONTINUE  # the driver's own instruction
    the_c_library_heap_may_not_grow(ledger)
    assert ledger.answer(MMAP, (page(1), 1 << 38, RW, GRANT, 2**64 - 1, 0)) == FULL  # far past the budget
    assert grant(ledger, 1, 3) == FULL
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
