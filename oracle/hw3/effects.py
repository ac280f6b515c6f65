"""What a call did to the implementation's own state, read from its observations before and after (rules.py's
Effects): which tables it changed, which blocks it took, whether it wrote the pool, which L1 slots a walk left
untouched, whether an append wrote slots it must not."""

import struct

from oracle.hw3.call import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import WILD, EngineState, Observation
from oracle.hw3.rules import WALKS, Effects
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L2_PT_SIZE, UNMAPPED


def effects_of(call: Call, before: Observation | None, seen: Observation | None, picked: frozenset[int],
               unread: tuple[Model | None, Model] | None = None) -> Effects | None:
    """What a call changed between two observations of the implementation (None when either is unknown), and
    `picked`, the blocks the model's call newly mapped. `unread`: the model before and after the call, when the
    engine's objects are not read (unread.py): where its append's record landed is then read from the pool."""
    if before is None or seen is None or before.engine is None or seen.engine is None:
        return None
    tables = {state.seq_id: state.block_table for state in before.engine.sequences}
    moved = frozenset(state.seq_id for state in seen.engine.sequences if tables.get(state.seq_id) != state.block_table)
    old, new = before.engine.ref_count, seen.engine.ref_count
    taken = frozenset(block for block in range(min(len(old), len(new))) if old[block] == 0 and new[block] > 0)
    skipped = _skipped(call, tables, before.engine, seen.engine) if not call.null and call.api in WALKS else frozenset()
    elsewhere = held = False
    if unread is not None and (landed := _landed(call, unread[1], before, seen)) is not None:  # the pool scanned once
        elsewhere, held = _elsewhere(landed, call, *unread), _held(landed, call, *unread)
    return Effects(moved, taken, before.pool != seen.pool, picked, skipped=skipped, stray=stray_write(call, before, seen),
                   elsewhere=elsewhere, held=held)


def wrote_elsewhere(call: Call, was: Model | None, model: Model, before: Observation, seen: Observation) -> bool:
    """Whether an append wrote its record, at its offset, into another block than the one the model's append put
    it in (`model`, after the call) and the one its logical block mapped before the call (`was`: an append
    that wrote a shared block in place is Task 4's): a block of its choosing, first fit's, made by this append
    or by the create or fork that mapped it."""
    landed = _landed(call, model, before, seen)
    return landed is not None and _elsewhere(landed, call, was, model)


def _elsewhere(landed: tuple[set[int], int], call: Call, was: Model | None, model: Model) -> bool:
    written, logical = landed
    seq, old = model.sequences[call.args[0]], was.sequences.get(call.args[0]) if was is not None else None
    mine = {seq.blocks[logical]} | ({old.blocks[logical]} if old is not None and logical < len(old.blocks) else set())
    return not mine & written


def wrote_held(call: Call, was: Model | None, model: Model, before: Observation, seen: Observation) -> bool:
    """Whether an append wrote its record, at its offset, into a block the model held mapped before the call
    (`was`) and did not write it in (`model`, after the call): a block it shares, written in place, or one a
    sequence holds, handed out as free. A reference count is wrong somewhere (fork_witness.py asks the fork)."""
    landed = _landed(call, model, before, seen)
    return landed is not None and _held(landed, call, was, model)


def _held(landed: tuple[set[int], int], call: Call, was: Model | None, model: Model) -> bool:
    if was is None:
        return False
    written, logical = landed
    return bool(written & (was.mapped() - {model.sequences[call.args[0]].blocks[logical]}))


def wrote_in_place(call: Call, was: Model | None, before: Observation | None, seen: Observation | None) -> frozenset[int]:
    """The sequences that share, by the model before an append (`was`), the block its record goes into, when the
    append wrote the record there, at its offset (the pool's bytes): in place, where the model copies the block
    first (or refuses the append, no block being free for the copy). Empty when the block is not shared, the
    record did not land there, or the pools cannot be compared. The evidence fork_witness.py asks of a fork."""
    if (call.api != "append_kv" or call.null or was is None or before is None or seen is None or before.pool is None
            or seen.pool is None or len(before.pool) != len(seen.pool)):
        return frozenset()
    seq = was.sequences.get(call.args[0])
    logical, offset = divmod(len(seq.values), KV_PER_BLOCK) if seq is not None else (0, 0)
    if seq is None or logical >= len(seq.blocks):
        return frozenset()
    block = seq.blocks[logical]
    sharers = frozenset(seq_id for seq_id, other in was.sequences.items() if block in other.blocks)
    at = (block * KV_PER_BLOCK + offset) * KV_SIZE
    record = struct.pack("<i", call.args[1])
    landed = seen.pool[at : at + KV_SIZE] == record != before.pool[at : at + KV_SIZE]
    return sharers if landed and len(sharers) > 1 else frozenset()


def _landed(call: Call, model: Model, before: Observation, seen: Observation) -> tuple[set[int], int] | None:
    """The blocks an append newly wrote its record into, at its offset, and the logical block the record is in
    (`model`: after the call); None when it is no append of a live sequence or the pools cannot be compared."""
    if call.api != "append_kv" or call.null or before.pool is None or seen.pool is None or len(before.pool) != len(seen.pool):
        return None
    seq = model.sequences.get(call.args[0])
    if seq is None or not seq.values:
        return None
    logical, offset = divmod(len(seq.values) - 1, KV_PER_BLOCK)
    record = struct.pack("<i", call.args[1])
    at = lambda block: (block * KV_PER_BLOCK + offset) * KV_SIZE  # noqa: E731
    written = {block for block in range(len(seen.pool) // BLOCK_SIZE)
               if seen.pool[at(block) : at(block) + KV_SIZE] == record != before.pool[at(block) : at(block) + KV_SIZE]}
    return (written, logical) if written else None


def stray_write(call: Call, before: Observation | None, seen: Observation | None) -> bool:
    """Whether an append wrote its record where its own table and kv_count put it, and other slots of that
    block too, which it did not copy there (a block it mapped fresh, or held already): slots written before
    their records arrive. Only when it wrote no other block (a second write elsewhere cannot relabel a
    Task 4 bug). False for any other call, or when either state is unknown."""
    if (call.api != "append_kv" or call.null or before is None or seen is None or before.engine is None
            or seen.engine is None):
        return False
    seq_id, value = call.args
    old = next((state for state in before.engine.sequences if state.seq_id == seq_id), None)
    new = next((state for state in seen.engine.sequences if state.seq_id == seq_id), None)
    if old is None or new is None or before.pool is None or seen.pool is None or len(before.pool) != len(seen.pool):
        return False
    logical, offset = divmod(old.kv_count, KV_PER_BLOCK)
    block, was = (_entry(state.block_table, logical) for state in (new, old))
    start = block * BLOCK_SIZE
    if block < 0 or start + BLOCK_SIZE > len(seen.pool) or was not in (UNMAPPED, block):
        return False  # no block, or a copy-on-write: the copy is Task 4's
    record = start + offset * KV_SIZE
    if seen.pool[record : record + KV_SIZE] != struct.pack("<i", value):
        return False
    if seen.pool[:start] != before.pool[:start] or seen.pool[start + BLOCK_SIZE :] != before.pool[start + BLOCK_SIZE :]:
        return False  # it wrote another block too: which write is astray, and which the append's, is Task 4's to say
    return (seen.pool[start:record] != before.pool[start:record]
            or seen.pool[record + KV_SIZE : start + BLOCK_SIZE] != before.pool[record + KV_SIZE : start + BLOCK_SIZE])


def _entry(table: tuple, logical: int) -> int:
    """The block a block table maps for a logical block; UNMAPPED when none (a NULL or wild L2 table)."""
    l1, l2 = divmod(logical, L2_PT_SIZE)
    row = table[l1] if l1 < len(table) else None
    return row[l2] if row is not None and row != WILD and l2 < len(row) else UNMAPPED


def _skipped(call: Call, tables: dict[int, tuple], before: EngineState, after: EngineState) -> frozenset[int]:
    """The L1 slots of the sequence a free (or the parent a fork) walks that the call left untouched while it
    handled every block of the others: a free that dropped no reference of a slot's blocks, a fork whose child
    has no table where the parent has one. Empty when the call handled no slot, or part of one, or left only
    the sequence's last block (a walk bounded by the records, not the L1 loop's doing)."""
    table = tables.get(call.args[0])
    if table is None:
        return frozenset()
    walked, skipped = set(), set()
    if call.api == "free_sequence":
        old, new = before.ref_count, after.ref_count
        for l1, l2 in enumerate(table):
            blocks = [block for block in (l2 if l2 and l2 != WILD else ()) if 0 <= block < min(len(old), len(new))]
            dropped = {new[block] < old[block] for block in blocks}
            if dropped == {True}:
                walked.add(l1)
            elif dropped == {False}:
                skipped.add(l1)
            elif dropped:
                return frozenset()
    else:
        child = next((state.block_table for state in after.sequences if state.seq_id == call.args[1]), None)
        if child is None:
            return frozenset()
        for l1, (l2, copy) in enumerate(zip(table, child)):
            if l2 is not None and l2 != WILD and any(block != UNMAPPED for block in l2):
                (walked if copy is not None else skipped).add(l1)
    left = [block for l1 in sorted(skipped) for block in table[l1] if block != UNMAPPED]
    last = next((block for l2 in reversed(table) if l2 and l2 != WILD for block in reversed(l2) if block != UNMAPPED), None)
    return frozenset() if not walked or left == [last] else frozenset(skipped)


def copied_a_block(kv_data: int, before: bytes | None, after: bytes | None) -> bool:
    """Whether an append of `kv_data` copied a block, by the pool before and after it (the tables unread): one
    block got the record at a slot and, at other slots, bytes it did not hold, each the bytes another block holds
    there (the block it copied), not all zero (a fresh block zeroed is no copy). A copy of a block whose bytes
    were those of the block it went to shows no copy (fork_witness.py asks this of the graded run's calls after
    an append that wrote a shared block in place)."""
    if before is None or after is None or len(before) != len(after) or before == after:
        return False
    record = struct.pack("<i", kv_data)

    def slot(pool: bytes, block: int, at: int) -> bytes:
        return pool[(block * KV_PER_BLOCK + at) * KV_SIZE : (block * KV_PER_BLOCK + at + 1) * KV_SIZE]

    blocks = len(after) // BLOCK_SIZE
    for block in range(blocks):
        if after[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE] == before[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE]:
            continue
        changed = [at for at in range(KV_PER_BLOCK) if slot(after, block, at) != slot(before, block, at)]
        for at in (at for at in changed if slot(after, block, at) == record):
            rest = [other_at for other_at in changed if other_at != at]
            copied = [slot(after, block, other_at) for other_at in rest]
            if not rest or set(copied) == {bytes(KV_SIZE)}:
                continue
            if any(other != block and [slot(after, other, other_at) for other_at in rest] == copied
                   for other in range(blocks)):
                return True
    return False
