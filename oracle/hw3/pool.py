"""The caller-owned pool as a grader prepares it: a magic number in every slot, guard zones either side.

Each 4-byte slot holds a different magic number, so a block copied from the wrong place, or a slot written
early, shows up as the wrong value rather than as a plausible one.
"""

import struct

from oracle.hw3.spec import KV_SIZE

GUARD_SIZE = 64  # bytes before and after the pool that no call may touch
GUARD_BYTE = 0xA5
MAGIC_BASE = 0x7E570000


def magic(slot: int) -> int:
    """The int32 a grader leaves in `slot` (a 4-byte slot index from the pool base)."""
    return MAGIC_BASE + slot


def initial_pool(pool_size: int) -> bytes:
    """The pool's bytes before any call: magic numbers slot by slot, a trailing partial slot cut short."""
    slots = -(-pool_size // KV_SIZE)
    return struct.pack(f"<{slots}i", *(magic(s) for s in range(slots)))[:pool_size]


GUARD = bytes([GUARD_BYTE]) * GUARD_SIZE
