"""HW3's driver protocol (driver.c, driven by adapter.py), and the reading of its replies: the layout inside the
core's frame (oracle/native/reply_pipe.py: the length, refused past REPLY_BOUND before the rest is read).

Protocol (little-endian, over two dedicated pipes; the submission's stdout/stderr go to a capped file):

    request  = op:u8  fail_at:i32  target:u64  a:i32  b:i32          (21 bytes)
        op: I llm_init (target = pool size, a = the grader's memory file, b = 1: a NULL pool; then offset:u64
            guard:u64, where guard+pool+guard lies in the file), C create (a, b = seq_id, initial_kv_len),
            F fork (parent, new), A append (seq_id, kv_data), R free_sequence (seq_id), D llm_destroy,
            L a leak check (under valgrind); target is the engine address (0 = NULL). fail_at: -1 unchanged,
            0 none, k: the k-th allocation from now fails (with the grader's ledger never more than 0: the
            ledger fails the grant itself, and the submission, which can read the request, is not told which).
    reply    = length:u32  status:u8  ...
        status 2 (fatal): text; the driver then exits (e.g. it cannot map the pool asked for);
        status 4 (fatal, heap): likewise, for a heap found corrupted: under valgrind a free, realloc or usable
        size of a pointer that is not live, or glibc's malloc aborting on its own corrupted lists (natively no
        memory error ends a call on the fence, so there it is the process's word: a crash, c/adapter.py)
        (3 is a probe's reply, driver_probes.c).
        status 0: ret:i64  call_allocations:u32  call_frees:u32  fault_fired:u8
                  allocations:u64  live_blocks:u64  live_bytes:u64  (the process's own counts: natively the
                  grader reads the live blocks from the driver's mappings instead, heap_maps.py)
        text = len:u16 bytes.

A reply says what the call returned, nothing of the pool or the engine: the grader reads the pool from its own
memory file and the engine from outside the process (adapter.py). A reply comes from the submission's process,
so it is untrusted: a reply that does not parse is the submission's failure (BadReply), "a reply the grader
cannot read".
"""

import struct
from dataclasses import dataclass

from oracle.native.native_heap import HeapFacts
from oracle.native.reply_pipe import BadReply, Fatal, fatal_reply

_REQUEST = struct.Struct("<BiQii")
_RESULT = struct.Struct("<qIIBQQQ")
_U16 = struct.Struct("<H")
MAX_OBSERVED_BLOCKS = 1 << 20  # a larger ref_count is not read (probe_state.py)
REPLY_BOUND = 1 << 12  # the most bytes an honest reply holds: a result, or a fatal reply's text (at most 511 bytes)


@dataclass(frozen=True, slots=True)
class Pointer:
    """An address the submission returned (an engine or a sequence), from one driver process."""

    address: int
    generation: int

    def __repr__(self) -> str:
        return f"Pointer(0x{self.address:x})"


@dataclass(frozen=True, slots=True)
class CallStats:
    """The heap activity of the last call: a failing call must show allocations == 0."""

    allocations: int
    frees: int
    injected_failure: bool  # an allocation failed because fail_allocation() asked for it
    asked: int = 0  # natively, the requests for a fresh block the grader's ledger answered (native_heap.py)


def parse_reply(data: bytes) -> tuple[int, HeapFacts] | Fatal:
    """One whole reply, its length field included: what the call returned with the process's own heap counts
    (a claim: native_heap.py judges them), or a fatal reply (the core's: reply_pipe.fatal_reply). BadReply when it
    is neither."""
    if (fatal := fatal_reply(data)) is not None:
        return fatal
    status = data[4]
    if status != 0:
        raise BadReply(f"status {status}")
    if len(data) != 5 + _RESULT.size:
        raise BadReply(f"{len(data)} bytes")
    ret, allocations, frees, fired, _total, live_blocks, live_bytes = _RESULT.unpack_from(data, 5)
    return ret, HeapFacts(allocations, frees, bool(fired), live_blocks, live_bytes)
