"""The caller-owned pool as a grader prepares it: a magic number in every slot, guard zones either side.

Each 4-byte slot holds a different magic number, so a block copied from the wrong place, or a slot written
early, shows up as the wrong value rather than as a plausible one. The numbers are a bijective hash of the
slot index, `slot * MAGIC_MUL + MAGIC_BASE (mod 2**32)` read as an int32: the multiplier is odd, so no two
slots share a number, and none of its four bytes is 0x00 or 0xFF, so the numbers of neighbouring slots
differ in every byte (a copy that misses one byte of a block shows up whichever byte it misses).

This is the one definition: the C programs (repro.py's repro and battery files) get
MAGIC_MUL and MAGIC_BASE from here and compute the same numbers in unsigned arithmetic.
"""

import struct

from oracle.hw3.spec import KV_SIZE

GUARD_SIZE = 64  # bytes before and after the pool that no call may touch
GUARD_BYTE = 0xA5
MAGIC_BASE = 0x7E570000
MAGIC_MUL = 0x9E3779B1  # odd (a bijection of the 32-bit slot indices); no byte is 0x00 or 0xFF
_MASK = 0xFFFFFFFF
_MAGIC_INV = pow(MAGIC_MUL, -1, 1 << 32)


def _int32(bits: int) -> int:
    return bits - (1 << 32) if bits & 0x80000000 else bits


def magic(slot: int) -> int:
    """The int32 a grader leaves in `slot` (a 4-byte slot index from the pool base)."""
    return _int32((slot * MAGIC_MUL + MAGIC_BASE) & _MASK)


def magic_slot(value: int) -> int:
    """The slot whose magic number `value` is (the inverse of magic, modulo 2**32): a number >= 0 that a
    caller compares with the pool's slot count (a value that is no magic number of the pool maps past it)."""
    return (((value & _MASK) - MAGIC_BASE) * _MAGIC_INV) & _MASK


_numbers = b""  # the magic numbers of the first slots, as many as the largest pool asked for yet


def initial_pool(pool_size: int) -> bytes:
    """The pool's bytes before any call: magic numbers slot by slot, a trailing partial slot cut short. (A slot's
    number depends on its index alone: every pool is the start of the largest one made yet, cut.)"""
    global _numbers
    if len(_numbers) < pool_size:
        slots = -(-pool_size // KV_SIZE)
        _numbers = struct.pack(f"<{slots}i", *(magic(s) for s in range(slots)))
    return _numbers[:pool_size]


GUARD = bytes([GUARD_BYTE]) * GUARD_SIZE


def c_defines() -> str:
    """The same constants, and magic() as the C macro MAGIC(slot), for the C programs the grader builds
    (they include <limits.h> and <stdint.h>). MAGIC is an integer constant expression, so it may initialise
    static data; the arithmetic is unsigned (it wraps, as defined) and the conversion to int goes through a
    value that fits, so no implementation-defined conversion and no undefined behaviour."""
    return f"""#define GUARD_SIZE {GUARD_SIZE}    /* bytes either side of the pool that no call may touch */
#define GUARD_BYTE {GUARD_BYTE:#04x}  /* what they hold */
#define MAGIC_BASE {MAGIC_BASE:#x}u
#define MAGIC_MUL {MAGIC_MUL:#x}u
/* the int32 in the pool's slot s before any call: the bits s * MAGIC_MUL + MAGIC_BASE (mod 2^32) */
#define MAGIC_BITS(s) ((uint32_t)((uint32_t)(s) * MAGIC_MUL + MAGIC_BASE))
#define MAGIC(s) (MAGIC_BITS(s) < 0x80000000u ? (int)MAGIC_BITS(s) : (int)(MAGIC_BITS(s) - 0x80000000u) - INT_MAX - 1)
"""
