"""The HW3 paged KV-cache memory manager in Python, written to be read line by line against the spec.

The six calls keep the C conventions: None where C returns NULL, 0/-1 for status. The pool is a
caller-owned writable buffer; KV records are little-endian int32 in 4-byte slots of 64-byte blocks.
"""

from __future__ import annotations

import struct

# The numbers the spec fixes (oracle/hw3/spec.py holds the same ones for the grader; this file imports
# nothing of pagedcheck, so it can be copied alone and graded as a submission).
BLOCK_SIZE = 64  # bytes per physical block
KV_SIZE = 4  # bytes per KV record: one little-endian int32
KV_PER_BLOCK = BLOCK_SIZE // KV_SIZE  # 16
L1_PT_SIZE = 16  # L2-table pointers in a sequence's L1 table
L2_PT_SIZE = 16  # physical block ids in one L2 table
MAX_LOGICAL_BLOCKS = L1_PT_SIZE * L2_PT_SIZE  # 256 per sequence
UNMAPPED = -1  # an L2 entry that maps no block
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_RECORD = struct.Struct("<i")


class ListNode:
    """A node of an intrusive circular doubly-linked list; `owner` plays the part of container_of."""

    __slots__ = ("prev", "next", "owner")

    def __init__(self, owner: Sequence | None = None):
        self.prev: ListNode = self
        self.next: ListNode = self
        self.owner = owner

    def add_tail(self, head: ListNode) -> None:
        self.prev, self.next = head.prev, head
        head.prev.next = self
        head.prev = self

    def unlink(self) -> None:
        self.prev.next = self.next
        self.next.prev = self.prev
        self.prev = self.next = self


class Sequence:
    __slots__ = ("seq_id", "block_table", "kv_count", "node")

    def __init__(self, seq_id: int, kv_count: int):
        self.seq_id = seq_id
        self.block_table: list[list[int] | None] = [None] * L1_PT_SIZE
        self.kv_count = kv_count
        self.node = ListNode(self)


class LLMEngine:
    __slots__ = ("pool_base_ptr", "total_local_blocks", "free_local_blocks", "ref_count", "active_seqs")

    def __init__(self, pool: memoryview, total_local_blocks: int):
        self.pool_base_ptr = pool
        self.total_local_blocks = total_local_blocks
        self.free_local_blocks = total_local_blocks
        self.ref_count = [0] * total_local_blocks
        self.active_seqs = ListNode()

    def sequences(self):
        node = self.active_seqs.next
        while node is not self.active_seqs:
            yield node.owner
            node = node.next

    def find(self, seq_id: int) -> Sequence | None:
        node = self.active_seqs.next
        while node is not self.active_seqs:
            if node.owner.seq_id == seq_id:
                return node.owner
            node = node.next
        return None

    def allocate_block(self) -> int:
        """First fit: the lowest block id whose ref_count is 0."""
        try:
            block = self.ref_count.index(0)
        except ValueError:
            raise AssertionError("allocate_block called with no free block") from None  # callers probe first
        self.ref_count[block] = 1
        self.free_local_blocks -= 1
        return block

    def release_block(self, block: int) -> None:
        self.ref_count[block] -= 1
        if self.ref_count[block] == 0:
            self.free_local_blocks += 1


def _int32(name: str, value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{name}={value} does not fit in a C int")
    return value


def _engine(engine: object) -> LLMEngine:
    if not isinstance(engine, LLMEngine):
        raise TypeError(f"engine must be an LLMEngine or None, not {type(engine).__name__}")
    return engine


def llm_init(pool_addr: memoryview | bytearray | None, pool_size: int) -> LLMEngine | None:
    if type(pool_size) is not int:
        raise TypeError(f"pool_size must be an int, not {type(pool_size).__name__}")
    if pool_size < 0:
        raise ValueError(f"pool_size={pool_size} is negative; a size_t cannot hold it")
    if pool_addr is None or pool_size < BLOCK_SIZE:
        return None
    pool = memoryview(pool_addr)
    if pool.readonly or pool.nbytes < pool_size:
        raise ValueError(f"pool must be a writable buffer of at least pool_size={pool_size} bytes")
    return LLMEngine(pool.cast("B"), pool_size // BLOCK_SIZE)


def create_sequence(engine: LLMEngine | None, seq_id: int, initial_kv_len: int) -> Sequence | None:
    if engine is None:
        return None
    engine = _engine(engine)
    _int32("seq_id", seq_id)
    _int32("initial_kv_len", initial_kv_len)
    if initial_kv_len <= 0 or engine.find(seq_id) is not None:
        return None
    required = (initial_kv_len + KV_PER_BLOCK - 1) // KV_PER_BLOCK
    if required > MAX_LOGICAL_BLOCKS or required > engine.free_local_blocks:
        return None

    seq = Sequence(seq_id, initial_kv_len)
    for logical in range(required):
        l1, l2 = divmod(logical, L2_PT_SIZE)
        if seq.block_table[l1] is None:
            seq.block_table[l1] = [UNMAPPED] * L2_PT_SIZE
        seq.block_table[l1][l2] = engine.allocate_block()  # no write to the block: it keeps what it held
    seq.node.add_tail(engine.active_seqs)
    return seq


def free_sequence(engine: LLMEngine | None, seq_id: int) -> int:
    if engine is None:
        return -1
    engine = _engine(engine)
    _int32("seq_id", seq_id)
    seq = engine.find(seq_id)
    if seq is None:
        return -1
    seq.node.unlink()
    _release_blocks(engine, seq)
    return 0


def _release_blocks(engine: LLMEngine, seq: Sequence) -> None:
    for l2_table in seq.block_table:  # all 16 L1 slots: a NULL one does not end the table
        if l2_table is None:
            continue
        for block in l2_table:
            if block != UNMAPPED:
                engine.release_block(block)
    seq.block_table = [None] * L1_PT_SIZE


def fork_sequence(engine: LLMEngine | None, parent_seq_id: int, new_seq_id: int) -> Sequence | None:
    if engine is None:
        return None
    engine = _engine(engine)
    _int32("parent_seq_id", parent_seq_id)
    _int32("new_seq_id", new_seq_id)
    parent = engine.find(parent_seq_id)
    if parent is None or engine.find(new_seq_id) is not None:
        return None

    child = Sequence(new_seq_id, parent.kv_count)
    for l1, l2_table in enumerate(parent.block_table):
        if l2_table is None:
            continue
        child.block_table[l1] = list(l2_table)
        for block in l2_table:
            if block != UNMAPPED:
                engine.ref_count[block] += 1
    child.node.add_tail(engine.active_seqs)
    return child


def append_kv(engine: LLMEngine | None, seq_id: int, kv_data: int) -> int:
    if engine is None:
        return -1
    engine = _engine(engine)
    _int32("seq_id", seq_id)
    _int32("kv_data", kv_data)
    seq = engine.find(seq_id)
    if seq is None:
        return -1
    logical_idx, offset = divmod(seq.kv_count, KV_PER_BLOCK)
    if logical_idx >= MAX_LOGICAL_BLOCKS:
        return -1
    l1, l2 = divmod(logical_idx, L2_PT_SIZE)
    l2_table = seq.block_table[l1]
    block = UNMAPPED if l2_table is None else l2_table[l2]
    shared = block != UNMAPPED and engine.ref_count[block] > 1
    if (block == UNMAPPED or shared) and engine.free_local_blocks == 0:
        return -1  # OOM: nothing allocated, not even the L2 table

    if l2_table is None:
        l2_table = seq.block_table[l1] = [UNMAPPED] * L2_PT_SIZE
    if block == UNMAPPED:
        block = l2_table[l2] = engine.allocate_block()
    elif shared:  # copy-on-write: all 64 bytes, written or not
        new_block = engine.allocate_block()
        pool = engine.pool_base_ptr
        pool[new_block * BLOCK_SIZE : (new_block + 1) * BLOCK_SIZE] = pool[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE]
        engine.release_block(block)  # shared, so it stays allocated
        block = l2_table[l2] = new_block

    _RECORD.pack_into(engine.pool_base_ptr, block * BLOCK_SIZE + offset * KV_SIZE, kv_data)
    seq.kv_count += 1
    return 0


def llm_destroy(engine: LLMEngine | None) -> int:
    if engine is None:
        return -1
    engine = _engine(engine)
    for seq in list(engine.sequences()):
        seq.node.unlink()
        _release_blocks(engine, seq)
    engine.ref_count = []
    engine.pool_base_ptr = memoryview(b"")  # the pool is the caller's: drop our view, never free it
    return 0
