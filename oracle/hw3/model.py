"""The oracle: an independent, deliberately plain model of the HW3 memory manager.

It shares no code with any implementation. A sequence is a list of KV values plus a list of physical block
ids (logical block i -> blocks[i]); a block's ref count is how many mappings it has (`mappings`, counted as
each call maps or drops a block: a call costs what it changes, not the whole state); physical memory is a
dict from slot to value that defaults to the slot's magic number; first fit is "the smallest block id that
nobody maps". Each call returns an Outcome: the C return value and the boundary events it exercised.
"""

import struct
from collections import Counter
from dataclasses import dataclass, field

from oracle.hw3.pool import initial_pool, magic
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L2_PT_SIZE, MAX_KV, MAX_LOGICAL_BLOCKS

_BLOCK = struct.Struct(f"<{KV_PER_BLOCK}i")  # one block's records, little-endian int32

NULL, NOT_NULL = False, True  # what create/fork/llm_init return, as far as the model can say


@dataclass(slots=True)
class ModelSequence:
    values: list[int]
    blocks: list[int]
    wild: frozenset[int] = frozenset()  # L1 slots an implementation's state showed unreadable (resync.py)
    bare: frozenset[int] = frozenset()  # L1 slots with records and no L2 table, in an implementation's state (resync.py)


@dataclass(slots=True)
class Outcome:
    returned: bool | int  # NULL/NOT_NULL for pointer-returning calls, 0/-1 for the others
    events: tuple[str, ...] = ()


@dataclass
class Model:
    pool_size: int | None = None  # None: no pool (never initialised, or llm_init got NULL)
    live: bool = False  # whether the engine handle is non-NULL
    total: int = 0
    sequences: dict[int, ModelSequence] = field(default_factory=dict)  # insertion order = active list order
    memory: dict[int, int] = field(default_factory=dict)  # slot -> value written; others hold magic(slot)
    mappings: Counter = field(default_factory=Counter)  # block -> how many sequences' blocks map it (mapped ones only)
    _image: bytearray = field(default_factory=bytearray)
    _dirty: set[int] = field(default_factory=set)

    # -- counts ----------------------------------------------------------------------------------------

    def ref_count(self) -> list[int]:
        counts = [0] * self.total
        for block, refs in self.mappings.items():
            counts[block] = refs
        return counts

    def refs(self, block: int) -> int:
        return self.mappings[block]

    def mapped(self) -> set[int]:
        return set(self.mappings)

    def free_blocks(self) -> int:
        return self.total - len(self.mappings)

    def free_count(self) -> int:
        """What free_local_blocks must say."""
        return self.free_blocks()

    def first_free(self, count: int = 1) -> list[int]:
        return sorted(set(range(self.total)).difference(self.mappings))[:count]

    def _map(self, *blocks: int) -> None:
        """Each of `blocks` gains a mapping."""
        self.mappings.update(blocks)

    def _unmap(self, *blocks: int) -> None:
        """Each of `blocks` loses a mapping; a block left with none is free."""
        mappings = self.mappings
        for block in blocks:
            mappings[block] -= 1
            if not mappings[block]:
                del mappings[block]

    def read(self, slot: int) -> int:
        value = self.memory.get(slot)
        return magic(slot) if value is None else value

    def write(self, slot: int, value: int) -> None:
        self.memory[slot] = value
        self._dirty.add(slot)

    def pool_image(self) -> bytes:
        """The bytes the pool must hold now."""
        return bytes(self._current_image())

    def _current_image(self) -> bytearray:
        """The pool's bytes as the model holds them (slot s: read(s)), brought up to date with its writes."""
        for slot in self._dirty:
            struct.pack_into("<i", self._image, slot * KV_SIZE, self.memory[slot])
        self._dirty.clear()
        return self._image

    def records(self, blocks: list[int], count: int) -> list[int]:
        """The first `count` records of the blocks `blocks`, in order: read() of each of their slots."""
        image, values = self._current_image(), []
        for block in blocks:
            values.extend(_BLOCK.unpack_from(image, block * BLOCK_SIZE))
        del values[count:]
        return values

    # -- the six calls ---------------------------------------------------------------------------------

    def llm_init(self, pool_size: int, null_pool: bool = False) -> Outcome:
        self.sequences.clear()
        self.mappings.clear()
        self.memory.clear()
        self._dirty.clear()
        self.pool_size = None if null_pool else pool_size
        self._image = bytearray(b"" if null_pool else initial_pool(pool_size))
        self.live = not null_pool and pool_size >= BLOCK_SIZE
        self.total = pool_size // BLOCK_SIZE if self.live else 0
        if not self.live:
            return Outcome(NULL, ("init_refused", "invalid_call"))
        return Outcome(NOT_NULL, ("pool_over_256_blocks",) if self.total > MAX_LOGICAL_BLOCKS else ())

    def create_sequence(self, null_engine: bool, seq_id: int, initial_kv_len: int) -> Outcome:
        if null_engine or not self.live:
            return Outcome(NULL, ("null_engine", "invalid_call"))
        if initial_kv_len <= 0:
            return Outcome(NULL, ("bad_length", "invalid_call"))
        if seq_id in self.sequences:
            return Outcome(NULL, ("duplicate_id", "invalid_call"))
        required = -(-initial_kv_len // KV_PER_BLOCK)
        if required > MAX_LOGICAL_BLOCKS:
            return Outcome(NULL, ("cap_refusal",))
        if required > self.free_blocks():
            return Outcome(NULL, ("oom_refusal", "oom_on_create"))
        blocks = self.first_free(required)
        values = self.records(blocks, initial_kv_len)
        self.sequences[seq_id] = ModelSequence(values, blocks)
        self._map(*blocks)
        events = ["sequence_created"] + ["l2_allocated"] * -(-required // L2_PT_SIZE)
        if self.free_blocks() == 0:
            events.append("pool_exhausted")
        return Outcome(NOT_NULL, tuple(events))

    def fork_sequence(self, null_engine: bool, parent_seq_id: int, new_seq_id: int) -> Outcome:
        if null_engine or not self.live:
            return Outcome(NULL, ("null_engine", "invalid_call"))
        parent = self.sequences.get(parent_seq_id)
        if parent is None:
            return Outcome(NULL, ("unknown_id", "invalid_call"))
        if new_seq_id in self.sequences:
            return Outcome(NULL, ("duplicate_id", "invalid_call"))
        self.sequences[new_seq_id] = ModelSequence(list(parent.values), list(parent.blocks))
        self._map(*parent.blocks)
        return Outcome(NOT_NULL, ("sequence_forked",) + ("l2_allocated",) * -(-len(parent.blocks) // L2_PT_SIZE))

    def append_kv(self, null_engine: bool, seq_id: int, kv_data: int) -> Outcome:
        if null_engine or not self.live:
            return Outcome(-1, ("null_engine", "invalid_call"))
        seq = self.sequences.get(seq_id)
        if seq is None:
            return Outcome(-1, ("unknown_id", "invalid_call"))
        if len(seq.values) >= MAX_KV:
            return Outcome(-1, ("cap_refusal",))
        logical, offset = divmod(len(seq.values), KV_PER_BLOCK)
        unmapped = logical == len(seq.blocks)
        shared = not unmapped and self.refs(seq.blocks[logical]) > 1
        if (unmapped or shared) and self.free_blocks() == 0:
            events = ["oom_refusal", "oom_on_cow" if shared else "oom_on_append"]
            if unmapped and logical % L2_PT_SIZE == 0:
                events.append("oom_needing_l2")
            return Outcome(-1, tuple(events))

        events = []
        if unmapped:
            seq.blocks.append(self.first_free()[0])
            self._map(seq.blocks[logical])
            events.append("l2_allocated" if logical % L2_PT_SIZE == 0 else "new_block")
        elif shared:
            old, (new,) = seq.blocks[logical], self.first_free()
            for i in range(KV_PER_BLOCK):
                self.write(new * KV_PER_BLOCK + i, self.read(old * KV_PER_BLOCK + i))
            seq.blocks[logical] = new
            self._unmap(old)
            self._map(new)
            events.append("cow_copy")
        self.write(seq.blocks[logical] * KV_PER_BLOCK + offset, kv_data)
        seq.values.append(kv_data)
        if len(seq.values) == MAX_KV:
            events.append("reached_cap")
        return Outcome(0, tuple(events))

    def free_sequence(self, null_engine: bool, seq_id: int) -> Outcome:
        if null_engine or not self.live:
            return Outcome(-1, ("null_engine", "invalid_call"))
        seq = self.sequences.pop(seq_id, None)
        if seq is None:
            return Outcome(-1, ("unknown_id", "invalid_call"))
        self._unmap(*seq.blocks)
        return Outcome(0, ("sequence_freed",))

    def llm_destroy(self, null_engine: bool) -> Outcome:
        if null_engine or not self.live:
            return Outcome(-1, ("null_engine", "invalid_call"))
        self.sequences.clear()
        self.mappings.clear()
        self.live = False
        return Outcome(0)
