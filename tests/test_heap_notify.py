"""The kernel's channel to the heap's ledger with a real driver (oracle/native/heap_notify.py, driver.c's
hand_mappings_to_grader): the driver hands its seccomp listener over before any submission code runs, every
block is a grant the grader answered (and the kernel's list of mappings agrees), the grader fails the k-th
grant itself, and memory_safety's second layout puts each block at its first page's start."""

import os
from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.native.heap_maps import heap_maps
from oracle.native.outside import driver_pid
from oracle.native.ledger import PAGE
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched, seeded_build_cache


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("notify")
    result = build(REFERENCE_C, workdir)
    assert result.ok and result.driver is not None, result.message
    return result.driver


def test_every_block_is_a_grant_the_grader_answered_and_the_kernel_agrees(reference: Path) -> None:
    adapter = CAdapter(reference)
    try:
        engine = adapter.llm_init(4096)
        assert adapter._listener is not None, "the driver handed over no seccomp listener"
        ledger = adapter._listener.ledger
        assert (ledger.grants, ledger.live_blocks) == (2, 2)  # the engine and its ref_count
        # the driver's own memory (its table, its reply buffer) mapped before the handover, its places sent with the
        # listener; the pool's window taken by what it maps (the grader's file, at the offset given), and not
        # counted; nothing else made outside the span, and the C library's heap not used
        assert len(ledger.driver_regions) == 2 and all(size > 0 for _, size in ledger.driver_regions)
        assert ledger.window is None and ledger.outside == 0
        assert adapter.create_sequence(engine, 1, 1) is not None
        assert (ledger.grants, ledger.live_blocks) == (3, 5)  # a Sequence, its L1 table, one L2 table
        pid, _ = driver_pid(adapter._proc, adapter.box.expose(adapter.driver))
        seen = heap_maps(pid) if pid is not None else None
        assert seen is not None and (seen.blocks, seen.bytes) == (ledger.live_blocks, ledger.live_bytes)
        assert adapter.free_sequence(engine, 1) == 0
        assert (ledger.frees, ledger.live_blocks, adapter.last_call.frees) == (3, 2, 3)
        assert adapter.llm_destroy(engine) == 0
        assert ledger.live_blocks == 0 and adapter.observe(None).heap.live_blocks == 0
    finally:
        adapter.close()
    assert adapter.exit_status == 0  # its exit's own unmappings answered too


def test_the_grader_fails_the_kth_grant_and_knows_it(reference: Path) -> None:
    adapter = CAdapter(reference)
    try:
        engine = adapter.llm_init(4096)
        adapter.fail_allocation(2)  # create_sequence's L1 table
        assert adapter.create_sequence(engine, 1, 1) is None
        assert adapter.last_call.injected_failure and adapter.last_call.allocations == 1
        assert adapter.observe(None).heap.live_blocks == 2  # the reference freed its Sequence again
        assert adapter.create_sequence(engine, 1, 1) is not None  # once only
        assert not adapter.last_call.injected_failure
    finally:
        adapter.close()


@pytest.mark.parametrize("limit", ["budget", "max_blocks"])
def test_a_block_the_fence_cannot_hold_fails_natively_and_is_served_nowhere(reference: Path, limit: str) -> None:
    """Review 10's overread_past_budget and ledger_spent: a block past the ledger's budget or block count was served
    by the C library, with no guard page after it. It fails (NULL, as memory that ran out): the reference's
    create_sequence gets its Sequence and not its L1 table, frees the Sequence and returns NULL; no block lies
    anywhere the ledger did not grant (the driver's own count agrees), and the next block that fits is granted."""
    adapter = CAdapter(reference)
    try:
        engine = adapter.llm_init(4096)
        assert adapter._listener is not None, "the driver handed over no seccomp listener"
        ledger = adapter._listener.ledger
        if limit == "budget":
            ledger.budget = ledger.live_bytes + PAGE  # room for one page: the Sequence's
        else:
            ledger.max_blocks = len(ledger.live) + 1
        assert adapter.create_sequence(engine, 1, 1) is None
        assert not adapter.last_call.injected_failure and adapter.last_call.allocations == 1
        assert adapter.last_call.asked == 2  # the Sequence granted, its L1 table refused
        said = adapter.observe(None).heap
        assert (said.live_blocks, ledger.live_blocks, ledger.outside) == (2, 2, 0)  # the driver's word: the same two
        pid, _ = driver_pid(adapter._proc, adapter.box.expose(adapter.driver))
        seen = heap_maps(pid) if pid is not None else None
        assert seen is not None and seen.blocks == 2
        setattr(ledger, limit, 1 << 40)
        assert adapter.create_sequence(engine, 1, 1) is not None  # nothing spent: the next that fits is granted
        assert ledger.live_blocks == 5
    finally:
        adapter.close()
    assert adapter.exit_status == 0


def test_a_page_mapped_by_calling_the_drivers_own_instruction_is_a_block_counted_failed_and_kept(
        tmp_path: Path) -> None:
    """Review 12's l2_tables_on_the_drivers_pages on alloc_failure.patch (a create whose L2 table cannot be allocated
    returns NULL and leaks what it built): each L2 table is a page mapped (and unmapped) by
    calling the driver's own system call instruction, found by its bytes in the executable's text. Where the call
    was made plays no part: the page is a block of the call's (counted), failed in turn by the grader's countdown,
    and live for the rest of the run (its unmap refused), as any mapping outside the span is."""
    source = tmp_path / "llm_memory.c"
    base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    source.write_text(patched(base, SUBMISSIONS / "hostile" / "review12" / "l2_tables_on_the_drivers_pages.patch"))
    result = build(source, seeded_build_cache(tmp_path / "build"))
    assert result.ok and result.driver is not None, result.message
    adapter = CAdapter(result.driver)
    try:
        engine = adapter.llm_init(4096)
        assert adapter._listener is not None, "the driver handed over no seccomp listener"
        ledger = adapter._listener.ledger
        assert adapter.create_sequence(engine, 1, 1) is not None  # the page was found and mapped
        assert (adapter.last_call.allocations, ledger.grants, ledger.outside) == (3, 3, 1)  # Sequence, L1, the page
        assert adapter.free_sequence(engine, 1) == 0
        assert (ledger.frees, ledger.live_blocks, ledger.outside) == (2, 3, 1)  # its unmap refused: still live
        adapter.fail_allocation(3)  # the L2 table's page
        assert adapter.create_sequence(engine, 2, 1) is None
        assert adapter.last_call.injected_failure and ledger.asked == 3 and ledger.outside == 1
        assert adapter.observe(None).heap.live_blocks == 5  # the known bug reached: its Sequence and L1 table left
    finally:
        adapter.close()


@pytest.mark.parametrize("at_start", [False, True])
def test_the_layout_puts_each_block_at_a_page_end_or_start(reference: Path, at_start: bool) -> None:
    adapter = CAdapter(reference)
    adapter.blocks_at_start = at_start
    try:
        engine = adapter.llm_init(4096)
        address = adapter._address(engine)
        # the reference's engine is a malloc of sizeof(LLMEngine), a few dozen bytes: at the end, its last byte is
        # its page's last (16-byte aligned); at the start, its first byte is its page's first
        assert (address % PAGE == 0) == at_start
        assert at_start or 0 < PAGE - address % PAGE <= 64
    finally:
        adapter.close()


def test_the_listener_handed_over_is_taken_only_as_the_driver_protocol_says() -> None:
    """receive_listener: "y" with a descriptor is the listener (any extra descriptor closed), with the places of the
    driver's own memory after it (start:u64 length:u64 each, at most two); "n" (no seccomp user notification here),
    "y" without a descriptor, places cut short or too many, a closed socket or silence are none."""
    import socket as sockets
    import struct

    from oracle.native.heap_notify import NO_LISTENER, Handover, receive_listener

    def handed(data: bytes, fds: list[int], close: bool = False) -> Handover | None:
        ours, theirs = sockets.socketpair(sockets.AF_UNIX, sockets.SOCK_SEQPACKET)
        with ours, theirs:
            if data:
                sockets.send_fds(theirs, [data], fds)
            if close:
                theirs.close()
            return receive_listener(ours, 0.2)

    first, second = os.pipe()
    places = struct.pack("=4Q", 0x7F0000000000, 5 << 20, 0x7F0000800000, 4112)
    try:
        got = handed(b"y", [first, second])
        assert got is not None and os.path.sameopenfile(got.fd, first) and got.regions == ()
        os.close(got.fd)
        got = handed(b"y" + places, [first])
        assert got is not None and got.regions == ((0x7F0000000000, 5 << 20), (0x7F0000800000, 4112))
        os.close(got.fd)
        assert handed(b"y" + places[:12], [first]) is None
        assert handed(b"y" + places + places[:16], [first]) is None
        assert handed(NO_LISTENER, [first]) is None
        assert handed(b"y", []) is None
        assert handed(b"", [], close=True) is None
        assert handed(b"", []) is None  # nothing within the time
    finally:
        os.close(first)
        os.close(second)
