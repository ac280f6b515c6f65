"""The exact comparisons of an implementation's observed state with the model's, one part of the state each
(counters, the active list, block tables, records, the pool byte for byte, the guard zones): each yields
structured differences (difference.py). compare.py puts them together, coarsest first; renamed.py uses them
where block ids are compared up to a renaming."""

import struct
from functools import lru_cache
from typing import Iterator

from oracle.difference import Difference
from oracle.hw3.difference import (
    BLOCK_ID, BLOCKS_TAKEN, CONTENTS, FREE_COUNT, GUARD, KV_COUNT, LIST_BROKEN, LIST_IDS, LIST_ORDER, MAPPING, POOL,
    POOL_SIZE, REF_COUNT, TABLE_SHAPE, TOTAL,
)
from oracle.hw3.model import Model
from oracle.hw3.observation import WILD, EngineState, Observation, SequenceState
from oracle.hw3.pool import GUARD as GUARD_BYTES
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


def expected_table(blocks: list[int], wild: frozenset[int] = frozenset(),
                   bare: frozenset[int] = frozenset()) -> tuple[tuple[int, ...] | None, ...]:
    """The L1/L2 shape a mapping implies: an L2 table exactly where some entry of it is mapped; WILD in the
    slots `wild` names that the mapping does not reach (a model that took over an unreadable slot); NULL in
    the slots `bare` names while they map nothing (a model that took over records with no L2 table), and WILD in
    a `wild` slot whose records it took over as holes."""
    table: list[tuple[int, ...] | None] = []
    for l1 in range(L1_PT_SIZE):
        chunk = blocks[l1 * L2_PT_SIZE : (l1 + 1) * L2_PT_SIZE]
        if (l1 in bare or l1 in wild) and all(block == UNMAPPED for block in chunk):
            chunk = []
        table.append(tuple(chunk) + (UNMAPPED,) * (L2_PT_SIZE - len(chunk)) if chunk else WILD if l1 in wild else None)
    return tuple(table)
WILD_WORDS = "a wild pointer (reading its L2 table faulted: never set, or freed)"
CONSISTENT_FREE_COUNT = "it matches your ref_count array"


def expected_engine(model: Model) -> EngineState:
    """The engine state a live model implies: counters, ref_count, and the active list in its order (the counters
    and ref_count what engine_differences compares: Model.free_count and Model.ref_count)."""
    return EngineState(model.total, model.free_count(), tuple(model.ref_count()), tuple([
        _sequence(seq_id, len(seq.values), tuple(seq.blocks), seq.wild, seq.bare)
        for seq_id, seq in model.sequences.items()]))


@lru_cache(maxsize=4096)
def _sequence(seq_id: int, kv_count: int, blocks: tuple[int, ...], wild: frozenset[int],
              bare: frozenset[int]) -> SequenceState:
    """The SequenceState a model's sequence implies (a value: a step whose sequences did not change makes none)."""
    return SequenceState(seq_id, kv_count, expected_table(list(blocks), wild, bare))


def counter_differences(model: Model, engine: EngineState) -> Iterator[Difference]:
    if model.total != engine.total_local_blocks:
        yield Difference(TOTAL, "total_local_blocks", model.total, engine.total_local_blocks)
    if model.free_count() != engine.free_local_blocks:
        consistent = engine.ref_count.count(0) == engine.free_local_blocks
        # consistent with the implementation's own ref_count array: Constraint 5 held and the call took or
        # released the wrong number of blocks
        yield Difference(
            BLOCKS_TAKEN if consistent else FREE_COUNT, "free_local_blocks", model.free_count(), engine.free_local_blocks,
            note=f"{CONSISTENT_FREE_COUNT}: the call took or released the wrong number of blocks" if consistent else "",
        )


def list_differences(model: Model, engine: EngineState, any_order: bool) -> Iterator[Difference]:
    if engine.list_error:
        yield Difference(LIST_BROKEN, "active list", "intact", engine.list_error)
        return  # the walk stopped there: which ids it missed says nothing more
    ids = [s.seq_id for s in engine.sequences]
    if sorted(model.sequences) != sorted(ids):
        if any_order:
            yield Difference(LIST_IDS, "active list", f"the ids {sorted(model.sequences)} in any order", sorted(ids))
        else:
            yield Difference(LIST_IDS, "active list", list(model.sequences), ids)
    elif not any_order and list(model.sequences) != ids:
        yield Difference(LIST_ORDER, "active list", list(model.sequences), ids)


def paired(model: Model, engine: EngineState) -> list[tuple[int, object, object]]:
    """(seq_id, model sequence, observed sequence) for the ids on both sides, in the model's order."""
    states = {s.seq_id: s for s in engine.sequences}
    return [(seq_id, seq, states[seq_id]) for seq_id, seq in model.sequences.items() if seq_id in states]


def engine_differences(model: Model, engine: EngineState, pool: bytes | None, any_order: bool) -> Iterator[Difference]:
    yield from counter_differences(model, engine)
    pairs = paired(model, engine)
    yield from list_differences(model, engine, any_order)
    for seq_id, seq, state in pairs:
        if len(seq.values) != state.kv_count:
            yield Difference(KV_COUNT, f"seq {seq_id} kv_count", len(seq.values), state.kv_count, seq=seq_id)
        yield from table_differences(seq_id, expected_table(seq.blocks, seq.wild, seq.bare), state.block_table)
    ref_count = tuple(model.ref_count())
    if len(ref_count) != len(engine.ref_count):
        yield Difference(REF_COUNT, "ref_count", f"{len(ref_count)} entries", len(engine.ref_count))
    else:
        for block, (want, have) in enumerate(zip(ref_count, engine.ref_count)):
            if want != have:
                yield Difference(REF_COUNT, f"ref_count[{block}]", want, have)
    if pool is not None:
        for seq_id, seq, _ in pairs:
            yield from contents_differences(seq_id, seq.values, seq.blocks, pool)


def shape_difference(seq_id: int, l1: int, want: tuple | None, have: tuple | None) -> Difference | None:
    """An L1 slot holding an L2 table where the model has none (or the reverse), or one of the wrong length."""
    where = f"seq {seq_id} block_table[{l1}]"
    if (want is None) != (have is None) or (want == WILD) != (have == WILD):
        shape = lambda t: "NULL" if t is None else WILD_WORDS if t == WILD else "an L2 table"  # noqa: E731
        return Difference(TABLE_SHAPE, where, shape(want), shape(have), seq=seq_id)
    if want is not None and have is not None and len(want) != len(have):
        return Difference(TABLE_SHAPE, where, f"{len(want)} L2 entries", len(have), seq=seq_id)
    return None


def table_differences(seq_id: int, expected: tuple, got: tuple) -> Iterator[Difference]:
    """The first differing entry of each L1 slot (block ids compared exactly)."""
    if expected == got:
        return
    if len(expected) != len(got):
        yield Difference(TABLE_SHAPE, f"seq {seq_id} block_table", f"{len(expected)} L1 slots", len(got), seq=seq_id)
        return
    for l1, (want, have) in enumerate(zip(expected, got)):
        if want == have:
            continue
        shape = shape_difference(seq_id, l1, want, have)
        if shape:
            yield shape
            continue
        l2 = next(i for i, (w, h) in enumerate(zip(want, have)) if w != h)
        aspect = BLOCK_ID if want[l2] >= 0 and have[l2] >= 0 else MAPPING
        yield Difference(aspect, f"seq {seq_id} block_table[{l1}][{l2}]", want[l2], have[l2], seq=seq_id)


def contents_differences(seq_id: int, values: list[int], blocks: list[int], pool: bytes) -> Iterator[Difference]:
    """Read the sequence through the model's mapping and the implementation's pool; the first wrong record. A
    record whose logical block maps no block (a state taken over, resync.py) is nowhere to read: skipped."""
    want = struct.pack(f"<{len(values)}i", *values)
    got = b"".join(pool[b * BLOCK_SIZE : (b + 1) * BLOCK_SIZE] if b != UNMAPPED else want[i * BLOCK_SIZE : (i + 1) * BLOCK_SIZE]
                   for i, b in enumerate(blocks))[: len(values) * KV_SIZE]
    if got == want:
        return
    index = next(i for i in range(len(values)) if got[i * KV_SIZE : (i + 1) * KV_SIZE] != want[i * KV_SIZE : (i + 1) * KV_SIZE])
    (actual,) = struct.unpack_from("<i", got, index * KV_SIZE) if len(got) >= (index + 1) * KV_SIZE else (None,)
    where = f"seq {seq_id} record {index} (block {blocks[index // KV_PER_BLOCK]})"
    yield Difference(CONTENTS, where, values[index], actual, seq=seq_id)


def pool_size_difference(image: bytes, seen: Observation) -> Difference | None:
    if seen.pool is None:
        return Difference(POOL_SIZE, "pool", "the caller's pool", "none")
    if len(seen.pool) != len(image):
        return Difference(POOL_SIZE, "pool", f"{len(image)} bytes", len(seen.pool))
    return None


def pool_differences(image: bytes, seen: Observation) -> Iterator[Difference]:
    """The pool byte for byte: the first differing slot, then the guard zones."""
    size = pool_size_difference(image, seen)
    if size:
        yield size
        return
    assert seen.pool is not None
    if seen.pool != image:
        at = next(i for i, (w, h) in enumerate(zip(image, seen.pool)) if w != h)
        yield pool_byte_difference(image, seen.pool, at)
    yield from guard_differences(seen)


def pool_byte_difference(image: bytes, pool: bytes, at: int) -> Difference:
    slot = at // KV_SIZE
    if (slot + 1) * KV_SIZE > len(image):  # the trailing partial slot no block covers
        return Difference(POOL, f"pool byte {at} (past the last block)", f"{image[at]:#04x}", f"{pool[at]:#04x}")
    block, offset = divmod(slot, KV_PER_BLOCK)
    want, have = (struct.unpack_from("<i", buf, slot * KV_SIZE)[0] for buf in (image, pool))
    return Difference(POOL, f"pool block {block} slot {offset} (byte {at})", want, have)


def guard_differences(seen: Observation) -> Iterator[Difference]:
    for name, guard in (("before", seen.guard_before), ("after", seen.guard_after)):
        if guard and guard != GUARD_BYTES[: len(guard)]:
            at = next(i for i, b in enumerate(guard) if b != GUARD_BYTES[i])
            yield Difference(GUARD, f"guard zone {name} the pool: byte {at}", f"{GUARD_BYTES[at]:#04x}", f"{guard[at]:#04x}")
