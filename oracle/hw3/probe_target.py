"""What a white-box probe drives: one small interface, implemented for C by the driver (c/probe_adapter.py) and,
for the tests' own Python variants, in the tests' process (tests/probe_in_process.py): one probe (probe_*.py)
serves both. No probe runs on a graded Python submission (pyprobes.py).

Everything here is an observation: what a call returned, a counter, a block table, the pool's bytes, or an
edit of a live table. The probe judges it in the grader; the submission's process never holds a verdict.
"""

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from oracle.hw3.observation import ImplementationFailure


@dataclass(frozen=True, slots=True)
class Counts:
    """An engine's counters, ref_count, active-list length (up to a limit) and whether the list is empty."""

    total: int
    free: int
    ref_count: tuple[int, ...]
    length: int | None  # None when not asked for
    empty: bool
    pool_base_ok: bool | None = None  # pool_base_ptr is the pool llm_init was given (C; None: no such field)


@dataclass(frozen=True, slots=True)
class SequenceView:
    """A sequence's fields, its whole block_table, and an identity per L2 table (to tell a copy from a share).
    A C sequence whose block_table is NULL has an empty table."""

    seq_id: int
    kv_count: int
    block_table: tuple[tuple[int, ...] | None, ...]
    l2_ids: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class PoolView:
    """The pool the last init_pool gave llm_init, as it is now."""

    sha256: str | None  # of the pool's bytes, when data is None
    data: bytes | None  # None past pool_file.POOL_BYTES_SHOWN (1 MiB): its digest instead
    guard_before: bytes = b""  # the guard zones either side
    guard_after: bytes = b""
    freed: bool = False  # the implementation passed the pool to free() (C)


class ProbeTarget(Protocol):
    """A submission, driven by a probe: `entered` is the API call the probe entered last (where a crash or a
    hang happened); `stopped` words an ImplementationFailure for the probe's result. A target that can see memory
    errors the run went on past (C natively: c/probe_adapter.py) words the first as `memory_error`."""

    entered: str | None

    def init_pool(self, size: int, pattern: bytes | None) -> Any:
        """llm_init(pool, size) on a fresh pool of `pattern` repeated (None: a NULL pool)."""

    def call(self, api: str, engine: Any, *args: int) -> Any:
        """One of the five calls after llm_init, with the C conventions (None for NULL, 0 / -1)."""

    def calls(self, api: str, engine: Any, args: list[tuple[int, ...]], stop: str) -> list[Any]:
        """call(api, engine, *one) for each of args, up to the first that returns NULL (stop "null") or not 0
        (stop "nonzero"); what each returned."""

    def counts(self, engine: Any, limit: int | None = None) -> Counts: ...

    def sequence(self, seq: Any) -> SequenceView: ...

    def move_l2(self, seq: Any, src: int, dst: int) -> None:
        """block_table[dst] = block_table[src]; block_table[src] = NULL, on the live sequence."""

    def move_entry(self, seq: Any, l1: int, src: int, dst: int) -> None:
        """block_table[l1][dst] = block_table[l1][src]; block_table[l1][src] = -1, on the live sequence."""

    def set_free(self, engine: Any, free: int) -> None:
        """free_local_blocks = free, on the live engine."""

    def pool(self) -> PoolView: ...

    def stopped(self, failure: ImplementationFailure) -> str: ...

    def close(self) -> None: ...


class LargePoolTarget(ProbeTarget, Protocol):
    """What big_pool needs besides (C only): a pool of reserved address space and white-box edits."""

    def reserve_pool(self, size: int) -> Any:
        """llm_init on a pool of `size` zero bytes that takes no memory until touched; None when there is no
        address space for it (raises ImplementationFailure when llm_init fails)."""

    def map_entry(self, seq: Any, logical: int, block: int) -> None:
        """The live sequence's entry for logical block `logical` = `block` (its L2 table exists)."""

    def hold_blocks(self, engine: Any, blocks: int, free: int) -> None:
        """ref_count[0 .. blocks) = 1 and free_local_blocks = free, on the live engine."""

    def ref_count(self, engine: Any, block: int) -> int: ...

    def pool_int(self, offset: int) -> int:
        """The int32 at byte `offset` of the last pool."""


def first_difference(got: bytes, want: bytes) -> int | None:
    """The first byte at which two byte strings differ (or where the shorter ends); None when equal."""
    if got == want:
        return None
    shorter, chunk = min(len(got), len(want)), 1 << 12
    start = next((at for at in range(0, shorter, chunk) if got[at:at + chunk] != want[at:at + chunk]), shorter)
    return next((at for at in range(start, min(start + chunk, shorter)) if got[at] != want[at]), shorter)


def calls_until(call: Any, args: Sequence[tuple[int, ...]], stop: str) -> list[Any]:
    """call(*one) for each of args, up to the first that returns NULL (stop "null") or not 0 ("nonzero")."""
    results = []
    for one in args:
        results.append(result := call(*one))
        if (result is None) if stop == "null" else (result != 0):
            break
    return results
