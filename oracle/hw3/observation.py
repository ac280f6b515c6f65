"""What an adapter reports of an implementation's state after each call, read white-box."""

from dataclasses import dataclass

# An L1 slot whose pointer could not be read (it faulted): a wild pointer, no L2 table. One entry no block id
# can be (and no read of 16 int entries gives), so an empty or short L2 list stays a plain wrong length.
WILD: tuple[int, ...] = (-(1 << 63),)


@dataclass(frozen=True, slots=True)
class SequenceState:
    """One `Sequence` as found on the active list."""

    seq_id: int
    kv_count: int
    block_table: tuple[tuple[int, ...] | None, ...]  # L1: L1_PT_SIZE entries, None for a NULL L2 pointer, WILD


@dataclass(frozen=True, slots=True)
class EngineState:
    """One `LLMEngine`: its counters, its ref_count array and its active list, head->next first."""

    total_local_blocks: int
    free_local_blocks: int
    ref_count: tuple[int, ...]
    sequences: tuple[SequenceState, ...]
    list_error: str | None = None  # how the active list is broken (prev/next mismatch, not circular), if it is


# The state of a live engine whose objects the grader does not read (a Python submission's: they exist only in
# its own interpreter, where what they say is the submission's word). unread.py puts the model's own state in
# its place, so only what the grader observes itself can differ: the return values, the pool and its guards.
UNREAD = EngineState(0, 0, (), (), "not read")


@dataclass(frozen=True, slots=True)
class HeapState:
    """Heap accounting, for implementations whose allocations an adapter can count (C)."""

    call_allocations: int  # malloc/calloc/realloc calls that succeeded during the last API call
    live_blocks: int  # heap blocks allocated and not yet freed
    live_bytes: int
    faulted: int = 0  # natively, pages outside any live block the submission's code read or wrote (memory errors)


@dataclass(frozen=True, slots=True)
class Observation:
    engine: EngineState | None  # None while the engine handle is NULL (refused init, or destroyed)
    pool: bytes | None  # the pool's bytes; None when init was given a NULL pool
    guard_before: bytes = b""
    guard_after: bytes = b""
    heap: HeapState | None = None
    state_read: bool = True  # False: `engine` is the model's, standing in for objects not read (unread.py)


class ImplementationFailure(Exception):
    """The implementation did not return normally: it raised, crashed, exited or hung. The message says which.
    `heap_corrupted`: the allocator found its heap corrupted (a double free, malloc aborting), a memory error
    whose cause may lie in any earlier call."""

    heap_corrupted: bool = False
