"""The driver's protocol (driver.c, driven by adapter.py), and the reading of its replies.

Protocol (little-endian, over two dedicated pipes; the submission's stdout/stderr go to a capped file):

    request  = op:u8  fail_at:i32  target:u64  a:i32  b:i32          (21 bytes)
        op: I llm_init (target = pool size, a = guard size, b = NULL pool; then guard+pool+guard bytes
            unless NULL), C create (a, b = seq_id, initial_kv_len), F fork (parent, new), A append
            (seq_id, kv_data), R free_sequence (seq_id), D llm_destroy, O observe; target is the engine
            address (0 = NULL). fail_at: -1 unchanged, 0 none, k: the k-th allocation from now fails.
    reply    = length:u32  status:u8  ...
        status 2 (fatal): text; the driver then exits (e.g. it cannot map the pool asked for);
        status 4 (fatal, heap): likewise, for a memory error: a read or write that faulted in the heap's guard
        pages or a freed block, a free of a pointer that is not live, or glibc's malloc aborting on its own
        corrupted lists (3 is a probe's reply, driver_probes.c).
        status 0: ret:i64  call_allocations:u32  call_frees:u32  fault_fired:u8
                  allocations:u64  live_blocks:u64  live_bytes:u64  (the process's own counts: natively the
                  grader reads the live blocks from the driver's mappings instead, heap_maps.py)
                  changed chunks: n:u32, n x (index:u32, up to 64 bytes of guard+pool+guard)
                  engine: kind:u8 (0 none, 1 state, 2 unreadable + text), state =
                      total:i32 free:i32 n_ref:u32 ref:i32*n_ref  n_seq:u32
                      n_seq x (seq_id:i32 kv_count:i32 has_table:u8 l2_mask:u16 wild_mask:u16
                               16 x i32 per bit set in l2_mask and not in wild_mask)
                      (wild_mask: the L1 slots whose pointer faulted when read: observed as WILD)
                      list_error: text (empty = none)
        text = len:u16 bytes.

Every reply observes the driver's live engine (the last llm_init's, until llm_destroy), so observe() of
that engine costs no round trip; observing any other address costs one ('O').

A reply comes from the submission's process, so it is untrusted: its length is refused before the rest is
read when it is over what any honest reply can hold (reply_bound: the pool's chunks, a ref_count of at most
MAX_OBSERVED_BLOCKS, one sequence per create or fork made so far), every count in it is checked against the
bytes that follow, and a reply that does not parse is the submission's failure, "a reply the grader cannot
read".
"""

import os
import select
import struct
import time
from dataclasses import dataclass

from oracle.hw3.observation import EngineState, ImplementationFailure, SequenceState, WILD
from oracle.hw3.c.log_channel import LogChannel
from oracle.hw3.spec import L1_PT_SIZE, L2_PT_SIZE

_REQUEST = struct.Struct("<BiQii")
_RESULT = struct.Struct("<qIIBQQQ")
_U8, _U16, _U32 = struct.Struct("<B"), struct.Struct("<H"), struct.Struct("<I")
_ENGINE_HEAD = struct.Struct("<iiI")
_SEQ_HEAD = struct.Struct("<iiBHH")
_CHUNK = 64
_L2_BYTES = L2_PT_SIZE * 4
MAX_OBSERVED_BLOCKS = 1 << 20  # driver.c's: a larger ref_count is not sent
_SEQUENCE_BYTES = _SEQ_HEAD.size + L1_PT_SIZE * _L2_BYTES  # the most one sequence of an observation takes
UNREADABLE = "sent a reply the grader cannot read"


class BadReply(Exception):
    """A driver reply that is not the protocol's (its text says where)."""


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

def pool_changes(data: bytes, at: int, region: int | None) -> tuple[list[tuple[int, int, int]], int]:
    """The changed chunks of a reply (from `at`) of a pool of `region` bytes (guards included; None: no pool):
    (start, end, where in data) each, and where the reply goes on."""
    (n_chunks,) = _U32.unpack_from(data, at)
    at += 4
    if 4 * n_chunks > len(data) - at:
        raise BadReply(f"{n_chunks} chunks of the pool")
    changes = []
    for _ in range(n_chunks):
        (index,) = _U32.unpack_from(data, at)
        start = index * _CHUNK
        if region is not None and start >= region:
            raise BadReply(f"chunk {index}, past the pool")
        end = min(start + _CHUNK, region) if region is not None else start
        if at + 4 + end - start > len(data):
            raise BadReply("a chunk cut short")
        changes.append((start, end, at + 4))
        at += 4 + end - start
    return changes, at


def reply_bound(region: int, made: int) -> int:
    """The most bytes an honest reply can hold: its head, every chunk of a pool of `region` bytes, a ref_count
    of MAX_OBSERVED_BLOCKS, a sequence per create or fork `made`, a list error's text, and room for the probes'
    own replies (c/probe_adapter.py)."""
    chunks = -(-region // _CHUNK) * (4 + _CHUNK)
    return (1 << 17) + chunks + 4 * MAX_OBSERVED_BLOCKS + _SEQUENCE_BYTES * (made + 1)


def parse_engine(data: bytes, at: int, made: int) -> EngineState | None:
    """The engine part of a reply (from `at`), after `made` creates and forks. Raises BadReply, struct.error
    on what is not the protocol, ImplementationFailure on the driver's "unreadable"."""
    kind = data[at]
    at += 1
    if kind == 0:
        return None
    if kind == 2:
        (n,) = _U16.unpack_from(data, at)
        raise ImplementationFailure(data[at + 2 : at + 2 + n].decode(errors="replace"))
    total, free, n_ref = _ENGINE_HEAD.unpack_from(data, at)
    at += _ENGINE_HEAD.size
    if n_ref > MAX_OBSERVED_BLOCKS or at + 4 * n_ref > len(data):
        raise BadReply(f"a ref_count of {n_ref} entries")
    ref_count = struct.unpack_from(f"<{n_ref}i", data, at)
    at += 4 * n_ref
    (n_seq,) = _U32.unpack_from(data, at)
    at += 4
    if n_seq > made + 1 or at + _SEQ_HEAD.size * n_seq > len(data):
        raise BadReply(f"{n_seq} sequences, after {made} creates and forks")
    sequences = []
    for _ in range(n_seq):
        seq_id, kv_count, has_table, mask, wild = _SEQ_HEAD.unpack_from(data, at)
        at += _SEQ_HEAD.size
        table: list[tuple[int, ...] | None] = []
        for i in range(L1_PT_SIZE):
            if wild >> i & 1:
                table.append(WILD)
            elif mask >> i & 1:
                table.append(struct.unpack_from(f"<{L2_PT_SIZE}i", data, at))
                at += _L2_BYTES
            else:
                table.append(None)
        sequences.append(SequenceState(seq_id, kv_count, tuple(table) if has_table else ()))
    (n,) = _U16.unpack_from(data, at)
    list_error = data[at + 2 : at + 2 + n].decode(errors="replace") if n else None
    return EngineState(total, free, ref_count, tuple(sequences), list_error)


def _drained(fd: int, timeout: float, log: LogChannel | None = None) -> bool:
    """Reads fd to end of file within timeout (draining valgrind's log meanwhile); whether it got there."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready = select.select([fd] + ([log.fd] if log else []), [], [], left)[0]
        if log is not None and log.fd in ready:
            log.drain()
        if fd in ready and not os.read(fd, 65536):
            if log is not None:
                log.drain()
            return True
    return False
