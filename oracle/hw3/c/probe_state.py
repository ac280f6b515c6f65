"""A C submission's objects as the grader sees them (the white-box probes, and a graded run's observation after
every call: engine_state) and as the probes edit them, read and written by the grader itself (outside.py), at
the addresses the submission's own pointers give, in the layout llm_memory.h fixes.

The structs below are the official header's, laid out by ctypes with this machine's C rules (the driver is
built here, for this machine); tests/test_probe_state.py checks every offset against gcc's offsetof.
"""

import ctypes
import struct

from oracle.hw3.c.driver_reply import MAX_OBSERVED_BLOCKS  # a larger ref_count is not read (big_pool: one at a time)
from oracle.native.outside import OutsideMemory, Unreachable
from oracle.hw3.observation import WILD, EngineState, ImplementationFailure, SequenceState
from oracle.hw3.probe_target import Counts, SequenceView
from oracle.hw3.spec import L1_PT_SIZE, L2_PT_SIZE

_INT = ctypes.sizeof(ctypes.c_int)
_POINTER = ctypes.sizeof(ctypes.c_void_p)
_CHUNK = 1 << 20  # a large edit is written a MiB at a time


class ListNode(ctypes.Structure):
    _fields_ = [("prev", ctypes.c_void_p), ("next", ctypes.c_void_p)]


class SequenceStruct(ctypes.Structure):
    _fields_ = [("seq_id", ctypes.c_int), ("block_table", ctypes.c_void_p), ("kv_count", ctypes.c_int),
                ("node", ListNode)]


class EngineStruct(ctypes.Structure):
    _fields_ = [("pool_base_ptr", ctypes.c_void_p), ("total_local_blocks", ctypes.c_int),
                ("free_local_blocks", ctypes.c_int), ("ref_count", ctypes.c_void_p), ("active_seqs", ListNode)]


def _engine(memory: OutsideMemory, address: int) -> EngineStruct:
    return EngineStruct.from_buffer_copy(memory.read(address, ctypes.sizeof(EngineStruct), "your engine (LLMEngine)"))


def _sequence(memory: OutsideMemory, address: int) -> SequenceStruct:
    return SequenceStruct.from_buffer_copy(memory.read(address, ctypes.sizeof(SequenceStruct), "your Sequence"))


def _list_length(memory: OutsideMemory, head: int, first: int, limit: int) -> int:
    """Nodes from `first` along next pointers until the head comes back, counted up to limit + 1."""
    n, node = 0, first
    while node != head and n <= limit:
        n += 1
        node = ListNode.from_buffer_copy(memory.read(node, ctypes.sizeof(ListNode),
                                                     "a node of your engine's active_seqs list")).next or 0
    return n


def counts(memory: OutsideMemory, address: int, limit: int | None) -> tuple[Counts, int]:
    """The engine's counters, ref_count (when 0 < total <= MAX_OBSERVED_BLOCKS), the active list's length up to
    `limit` (None: not walked) and whether it is empty; with its pool_base_ptr."""
    engine = _engine(memory, address)
    if not engine.ref_count:
        raise ImplementationFailure("state unreadable: ref_count is NULL")
    total = engine.total_local_blocks
    ref_count: tuple[int, ...] = ()
    if 0 < total <= MAX_OBSERVED_BLOCKS:
        data = memory.read(engine.ref_count, total * _INT, f"your engine's ref_count ({total} ints)")
        ref_count = struct.unpack(f"<{total}i", data)
    head = address + EngineStruct.active_seqs.offset
    first, last = engine.active_seqs.next or 0, engine.active_seqs.prev or 0
    length = None if limit is None else _list_length(memory, head, first, limit)
    made = Counts(total, engine.free_local_blocks, ref_count, length, first == head and last == head)
    return made, engine.pool_base_ptr or 0


def sequence(memory: OutsideMemory, address: int) -> SequenceView:
    """A sequence's fields and its whole block table: an L2 table that cannot be read is WILD (a wild pointer
    in that slot), while an L1 table that cannot be read is the submission's failure."""
    seq = _sequence(memory, address)
    if not seq.block_table:
        return SequenceView(seq.seq_id, seq.kv_count, (), ())
    l2s = struct.unpack(f"<{L1_PT_SIZE}Q", memory.read(seq.block_table, L1_PT_SIZE * _POINTER,
                                                       "your sequence's block_table (its L1 table)"))
    table: list[tuple[int, ...] | None] = []
    for l2 in l2s:
        if not l2:
            table.append(None)
            continue
        try:
            table.append(struct.unpack(f"<{L2_PT_SIZE}i", memory.read(l2, L2_PT_SIZE * _INT, "an L2 table")))
        except Unreachable:
            table.append(WILD)
    return SequenceView(seq.seq_id, seq.kv_count, tuple(table), tuple(l2 or None for l2 in l2s))


def engine_state(memory: OutsideMemory, address: int, owners: set[int]) -> EngineState:
    """The engine at `address` as a graded run observes it: its counters, ref_count (when 0 < total <=
    MAX_OBSERVED_BLOCKS and not NULL), and the active list from head->next, each node checked (its prev, that it
    belongs to one of `owners`, the Sequences create and fork returned since llm_init, that the list comes back
    to its head), as the PythonAdapter checks it. Raises Unreachable for what cannot be read, but an L2 table
    (WILD in its slot)."""
    engine = _engine(memory, address)
    total = engine.total_local_blocks
    ref_count: tuple[int, ...] = ()
    if 0 < total <= MAX_OBSERVED_BLOCKS and engine.ref_count:  # else the oracle reports total_local_blocks itself
        data = memory.read(engine.ref_count, total * _INT, f"your engine's ref_count ({total} ints)")
        ref_count = struct.unpack(f"<{total}i", data)
    head = address + EngineStruct.active_seqs.offset
    prev, node, error, at = head, engine.active_seqs.next or 0, None, None
    sequences: list[SequenceState] = []
    while node != head:
        if not node:
            error = "the next pointer before it is NULL"
            break
        seq = node - SequenceStruct.node.offset
        at = seq if seq in owners else None
        links = ListNode.from_buffer_copy(memory.read(node, ctypes.sizeof(ListNode), "a node of your engine's active_seqs list"))
        if (links.prev or 0) != prev:
            error = "prev does not point to the node before it"
        elif at is None:
            error = "the node belongs to no sequence that create or fork returned"
        elif len(sequences) > len(owners):
            error = "list does not return to its head"
        if error is not None:
            break
        view = sequence(memory, seq)
        sequences.append(SequenceState(view.seq_id, view.kv_count, view.block_table))
        prev, node = node, links.next or 0
    if error is None and (engine.active_seqs.prev or 0) != prev:
        error = "head.prev is not the last node"
    if error is not None and not error.startswith(("list", "head")):
        where = f" (seq {_sequence(memory, at).seq_id})" if at is not None else ""
        error = f"position {len(sequences)}{where}: {error}"
    return EngineState(total, engine.free_local_blocks, ref_count, tuple(sequences), error)


def _l1_slot(seq: SequenceStruct, slot: int) -> int:
    return seq.block_table + slot * _POINTER


def move_l2(memory: OutsideMemory, address: int, src: int, dst: int) -> None:
    """block_table[dst] = block_table[src]; block_table[src] = NULL."""
    seq = _sequence(memory, address)
    what = "your sequence's block_table (its L1 table)"
    moved = memory.read(_l1_slot(seq, src), _POINTER, what)
    memory.write(_l1_slot(seq, dst), moved, what)
    memory.write(_l1_slot(seq, src), bytes(_POINTER), what)


def _l2_table(memory: OutsideMemory, seq: SequenceStruct, slot: int) -> int:
    (l2,) = struct.unpack("<Q", memory.read(_l1_slot(seq, slot), _POINTER, "your sequence's block_table (its L1 table)"))
    return l2


def move_entry(memory: OutsideMemory, address: int, l1: int, src: int, dst: int) -> None:
    """block_table[l1][dst] = block_table[l1][src]; block_table[l1][src] = -1."""
    l2 = _l2_table(memory, _sequence(memory, address), l1)
    moved = memory.read(l2 + src * _INT, _INT, "an L2 table")
    memory.write(l2 + dst * _INT, moved, "an L2 table")
    memory.write(l2 + src * _INT, struct.pack("<i", -1), "an L2 table")


def map_entry(memory: OutsideMemory, address: int, logical: int, block: int) -> None:
    """The entry of logical block `logical` = `block`, in an L2 table the sequence has (none: nothing)."""
    l2 = _l2_table(memory, _sequence(memory, address), logical // L2_PT_SIZE)
    if l2:
        memory.write(l2 + logical % L2_PT_SIZE * _INT, struct.pack("<i", block), "an L2 table")


def hold_blocks(memory: OutsideMemory, address: int, blocks: int, count: int) -> None:
    """ref_count[0 .. blocks) = count."""
    ref_count = _engine(memory, address).ref_count or 0
    pattern = struct.pack("<i", count) * (_CHUNK // _INT)
    for start in range(0, blocks * _INT, _CHUNK):
        part = pattern[: min(_CHUNK, blocks * _INT - start)]
        memory.write(ref_count + start, part, f"your engine's ref_count ({blocks} ints)")


def set_free(memory: OutsideMemory, address: int, free: int) -> None:
    memory.write(address + EngineStruct.free_local_blocks.offset, struct.pack("<i", free),
                 "your engine's free_local_blocks")


def ref_count(memory: OutsideMemory, address: int, block: int) -> int:
    table = _engine(memory, address).ref_count or 0
    return struct.unpack("<i", memory.read(table + block * _INT, _INT, f"your engine's ref_count[{block}]"))[0]
