"""What an adapter reads back from an implementation after a call, in block ids."""

from dataclasses import dataclass


class ImplementationFailure(Exception):
    """The implementation raised, or its state could not be read; the message says which."""


@dataclass(frozen=True)
class Observation:
    tables: dict[int, tuple[int, ...]]  # the live requests' block tables, by the machine's request id
    free: tuple[int, ...] | None  # the free blocks in the order they will be taken; None: not readable
    ref_counts: dict[int, int] | None = None  # every block's ref count as the implementation keeps it
    hashes: dict[int, object] | None = None  # the blocks that carry a hash, and the hash they carry
    indexed: tuple[int, ...] | None = None  # the blocks the hash index points to, sorted (with repeats)
