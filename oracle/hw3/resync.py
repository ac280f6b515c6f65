"""A model that can take over an implementation's observed state, so a directed check reads past another
rule's bug: after the bug, the model starts again from what the implementation holds, and the next calls are
judged by what each of them changes.

`TrackedModel` keeps ref_count and free_local_blocks as state of their own (the plain Model derives them from
the mappings), updated by each call the way the spec says (each mapping taken or dropped moves its block's
count; a block whose count leaves or reaches 0 moves the free count). Derived or kept, they agree until
`resync` copies an implementation's own counts, which may be wrong."""

import struct
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain

from oracle.hw3.model import Model, ModelSequence, Outcome
from oracle.hw3.observation import WILD, Observation
from oracle.hw3.pool import magic
from oracle.hw3.spec import KV_PER_BLOCK, KV_SIZE, L2_PT_SIZE, MAX_KV, UNMAPPED


@dataclass
class TrackedModel(Model):
    counts: list[int] = field(default_factory=list)
    free: int = 0
    lost: str = ""  # why the counts say nothing (a negative one): no call that reads them can be judged

    def ref_count(self) -> list[int]:
        return list(self.counts)

    def _map(self, *blocks: int) -> None:
        pass  # the counts are kept by _tracked, from the mappings before and after each call (Model.mappings unused)

    def _unmap(self, *blocks: int) -> None:
        pass

    def refs(self, block: int) -> int:
        self._trust_counts()
        return self.counts[block]

    def free_blocks(self) -> int:
        """The free count a call checks before it allocates: the kept count, but never more blocks than
        ref_count shows free (after another rule's bug the two may disagree; a call cannot take a block that
        is not there, so the model goes on judging the other rules instead of losing its way)."""
        self._trust_counts()
        return min(self.free, sum(1 for count in self.counts if count == 0))

    def _trust_counts(self) -> None:
        """A negative count is no state any call leaves: which block a call may take, or whether one is
        shared, is anybody's guess. Calls decided before the counts (NULL engine, bad arguments, ids) are
        still judged; a call that reads them ends the program."""
        if self.lost:
            raise ModelLost(f"{self.lost}: no block can be judged free or shared")

    def free_count(self) -> int:
        """What free_local_blocks must say: the count kept call by call from the implementation's own."""
        return self.free

    def first_free(self, count: int = 1) -> list[int]:
        found = [block for block in range(self.total) if self.counts[block] == 0][:count]
        if len(found) < count:
            raise ModelLost(f"free_local_blocks says {self.free} blocks are free, ref_count only {len(found)}")
        return found

    def mapped(self) -> set[int]:
        return set(self._mappings())

    def _mappings(self) -> Counter:
        """How many mappings each block has. A hole (UNMAPPED: a logical block with no block, in a state taken
        over from an implementation) maps nothing."""
        counts = Counter(chain.from_iterable(seq.blocks for seq in self.sequences.values()))
        counts.pop(UNMAPPED, None)
        return counts

    def _tracked(self, api: str, *args: object) -> Outcome:
        """The call as the spec makes it on the counts: each mapping dropped decrements its block's count (and
        a count reaching 0 frees the block), each mapping taken increments it (and a count leaving 0 takes
        one), one mapping at a time, as an implementation's release and take do. After another rule's bug,
        two sequences may hold one block with a count of 1: what one writes there, the other reads, so each
        sequence's records are read back through its table."""
        self._refuse_wild(api, *args)
        before = self._mappings()
        outcome = getattr(super(), api)(*args)
        after = self._mappings()
        for block in before.keys() | after.keys():
            for _ in range(before[block] - after[block]):
                self.counts[block] -= 1
                self.free += self.counts[block] == 0
            for _ in range(after[block] - before[block]):
                self.free -= self.counts[block] == 0
                self.counts[block] += 1
        for seq in self.sequences.values():
            seq.values = [value if (block := seq.blocks[i // KV_PER_BLOCK]) == UNMAPPED
                          else self.read(block * KV_PER_BLOCK + i % KV_PER_BLOCK) for i, value in enumerate(seq.values)]
        return outcome

    def _refuse_wild(self, api: str, null_engine: bool, *args: object) -> None:
        """A call that would read an L1 slot the implementation left wild (taken over as WILD: its pointer
        faulted when read) reads garbage: what it does, nobody can say. Create reads no other sequence; fork
        and free read all of theirs; append reads the slot of its next record."""
        if null_engine or not self.live or api == "create_sequence":
            return
        ids = list(self.sequences) if api == "llm_destroy" else [args[0]]
        for seq_id in ids:
            seq = self.sequences.get(seq_id)  # type: ignore[call-overload]
            if seq is None or not seq.wild:
                continue
            if api == "append_kv" and len(seq.values) // KV_PER_BLOCK // L2_PT_SIZE not in seq.wild:
                continue
            raise ModelLost(f"{api} would read seq {seq_id}'s block_table[{min(seq.wild)}], a wild pointer")

    def _fill(self, seq: ModelSequence, kv_data: int) -> Outcome:
        """An append whose record falls in a hole (a logical block with records and no block, taken over): the
        spec's append of an unmapped logical block, which takes the first free block and writes the record at
        its offset there. The hole's earlier records are then what that block holds at their offsets."""
        logical, offset = divmod(len(seq.values), KV_PER_BLOCK)
        if self.free_blocks() == 0:
            return Outcome(-1, ("oom_refusal", "oom_on_append"))
        (block,) = self.first_free()
        seq.blocks[logical] = block
        self.free -= self.counts[block] == 0
        self.counts[block] += 1
        for record in range(logical * KV_PER_BLOCK, len(seq.values)):
            seq.values[record] = self.read(block * KV_PER_BLOCK + record % KV_PER_BLOCK)
        self.write(block * KV_PER_BLOCK + offset, kv_data)
        seq.values.append(kv_data)
        return Outcome(0, ("new_block",) + (("reached_cap",) if len(seq.values) == MAX_KV else ()))

    def llm_destroy(self, null_engine: bool) -> Outcome:
        self._refuse_wild("llm_destroy", null_engine)
        return super().llm_destroy(null_engine)

    def llm_init(self, pool_size: int, null_pool: bool = False) -> Outcome:
        outcome = super().llm_init(pool_size, null_pool)
        self.counts, self.free, self.lost = [0] * self.total, self.total, ""
        return outcome

    def create_sequence(self, null_engine: bool, seq_id: int, initial_kv_len: int) -> Outcome:
        return self._tracked("create_sequence", null_engine, seq_id, initial_kv_len)

    def fork_sequence(self, null_engine: bool, parent_seq_id: int, new_seq_id: int) -> Outcome:
        outcome = self._tracked("fork_sequence", null_engine, parent_seq_id, new_seq_id)
        if outcome.returned and (parent := self.sequences.get(parent_seq_id)) is not None:
            self.sequences[new_seq_id].bare = parent.bare  # the child copies the parent's table, NULL slots too
        return outcome

    def append_kv(self, null_engine: bool, seq_id: int, kv_data: int) -> Outcome:
        """An append that starts a new logical block where the implementation's L2 table already holds it as
        UNMAPPED (the table was made early) is the spec's append of an unmapped block; so is one whose record
        falls in a hole (see _fill)."""
        self._refuse_wild("append_kv", null_engine, seq_id, kv_data)  # before a hole: a wild slot's are holes too
        seq = self.sequences.get(seq_id) if self.live and not null_engine else None
        if seq is not None and _in_hole(seq) and len(seq.values) < MAX_KV:
            return self._fill(seq, kv_data)
        logical, offset = divmod(len(seq.values), KV_PER_BLOCK) if seq is not None else (0, 1)
        if seq is None or offset or logical >= len(seq.blocks) or any(b != UNMAPPED for b in seq.blocks[logical:]):
            return self._tracked("append_kv", null_engine, seq_id, kv_data)
        trailing = seq.blocks[logical:]
        del seq.blocks[logical:]
        outcome = None
        try:
            outcome = self._tracked("append_kv", null_engine, seq_id, kv_data)
        finally:  # refused or lost: the table stays as it was; made: the block takes the first hole's place
            seq.blocks += trailing if outcome is None or outcome.returned != 0 else trailing[1:]
        return outcome

    def free_sequence(self, null_engine: bool, seq_id: int) -> Outcome:
        return self._tracked("free_sequence", null_engine, seq_id)


class ModelLost(Exception):
    """The model cannot follow the implementation's state any further."""


def resync(model: TrackedModel, seen: Observation) -> str | None:
    """Makes `model` hold what `seen` shows: sequences (in list order), their records read through their own
    tables, the counts and the pool. None when it did; else why it cannot (and `model` is left as it was)."""
    engine = seen.engine
    if engine is None:
        model.live = False
        model.sequences.clear()
        return _take_pool(model, seen)
    if engine.list_error:
        return "the active list is broken"
    if len(engine.ref_count) != engine.total_local_blocks:
        return "ref_count does not have total_local_blocks entries"
    if seen.pool is None or len(seen.pool) != len(model.pool_image()):
        return "the pool is not the caller's"
    total, sequences = engine.total_local_blocks, {}
    slots = struct.unpack_from(f"<{len(seen.pool) // KV_SIZE}i", seen.pool)
    for state in engine.sequences:
        if state.seq_id in sequences or not 0 <= state.kv_count <= MAX_KV:
            return f"seq {state.seq_id} is listed twice or has kv_count {state.kv_count}"
        needed = -(-state.kv_count // KV_PER_BLOCK)
        blocks = _mapped(state.block_table, total, needed)  # even past kv_count: later calls use it
        if len(blocks) < -(-state.kv_count // KV_PER_BLOCK):
            return f"seq {state.seq_id} has no L2 entry for its record {len(blocks) * KV_PER_BLOCK}"
        values = [0 if (block := blocks[i // KV_PER_BLOCK]) == UNMAPPED else slots[block * KV_PER_BLOCK + i % KV_PER_BLOCK]
                  for i in range(state.kv_count)]  # a record in a hole is nowhere: never read, never compared
        wild = frozenset(l1 for l1, l2 in enumerate(state.block_table) if l2 == WILD)
        bare = frozenset(l1 for l1, l2 in enumerate(state.block_table) if l2 is None and l1 * L2_PT_SIZE < len(blocks))
        sequences[state.seq_id] = ModelSequence(values, blocks, wild, bare)
    model.live, model.total, model.sequences = True, total, sequences
    model.counts, model.free = list(engine.ref_count), engine.free_local_blocks
    negative = next((block for block, count in enumerate(model.counts) if count < 0), None)
    model.lost = "" if negative is None else f"ref_count[{negative}] is {model.counts[negative]}"
    return _take_pool(model, seen)


def _in_hole(seq: ModelSequence) -> bool:
    """Whether a sequence's next record falls in a logical block that maps no block, though it is not a new
    block past all it maps (see TrackedModel.append_kv)."""
    logical, offset = divmod(len(seq.values), KV_PER_BLOCK)
    return (logical < len(seq.blocks) and seq.blocks[logical] == UNMAPPED
            and (offset > 0 or any(block != UNMAPPED for block in seq.blocks[logical:])))


def _mapped(table: tuple, total: int, needed: int) -> list[int]:
    """The entries of a table's L2 tables from slot 0 up to the first NULL or wild slot, or the first entry that
    is neither a block nor UNMAPPED; UNMAPPED entries are holes (a create or append that mapped too few), and a
    NULL slot the `needed` logical blocks of the records reach is 16 holes (resync keeps it NULL: bare), as is a
    wild one (its L2 table freed under it, by a sequence it shared it with: the model keeps it wild). Holes
    past the last mapped entry and the `needed` logical blocks of the records are dropped, except one where an
    L2 table holds nothing else, so that its table is part of the shape (compare.expected_table)."""
    blocks: list[int] = []
    for l1, l2 in enumerate(table):
        if (l2 is None or l2 == WILD) and l1 * L2_PT_SIZE < needed:  # records with no L2 table the grader can read:
            blocks += [UNMAPPED] * L2_PT_SIZE  # holes, in a slot kept NULL (bare) or wild
            continue
        if l2 is None or l2 == WILD or len(l2) != L2_PT_SIZE:
            break
        if not all(0 <= block < total or block == UNMAPPED for block in l2):
            blocks += l2[:next(j for j, block in enumerate(l2) if not (0 <= block < total or block == UNMAPPED))]
            break
        blocks += l2
    while len(blocks) > needed and blocks[-1] == UNMAPPED and (len(blocks) - 1) % L2_PT_SIZE:
        blocks.pop()
    return blocks


def _take_pool(model: TrackedModel, seen: Observation) -> str | None:
    if model.pool_size is None:
        return None
    if seen.pool is None or len(seen.pool) != len(model.pool_image()):
        return "the pool is not the caller's"
    slots = struct.unpack_from(f"<{len(seen.pool) // KV_SIZE}i", seen.pool)
    model.memory = {slot: value for slot, value in enumerate(slots) if value != magic(slot)}
    model._image = bytearray(seen.pool)
    model._dirty.clear()
    return None
