"""The comparison up to a renaming of physical blocks (compare's `modulo={"block_ids"}`): what every rule but
first fit sees. The tables are compared first, since they define the renaming (model block -> implementation
block) that ref_count, the contents and the pool are compared through.

The pool's magic numbers need care: each slot starts out holding magic(slot), so a block's untouched slots
name the block itself, and a copy-on-write copy carries the old block's numbers elsewhere. A value is
therefore compared as a token: an aligned magic number of the block that holds it ("own"), of a block under
the renaming ("block", its implementation id), of a block nothing maps now ("free": the renaming says nothing
about where that block's counterpart is, since the correspondence of free blocks changes as blocks are freed
and reused); anything else is compared as the value itself.
"""

import struct
from collections import Counter
from typing import Iterator

from oracle.hw3.exact import (
    counter_differences, expected_table, guard_differences, list_differences, paired, pool_byte_difference,
    pool_size_difference, shape_difference,
)
from oracle.difference import Difference
from oracle.hw3.difference import CONTENTS, MAPPING, POOL, REF_COUNT, TABLE_SHAPE
from oracle.hw3.model import Model
from oracle.hw3.observation import WILD, EngineState, Observation
from oracle.hw3.pool import magic, magic_slot
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, UNMAPPED


def renamed_differences(model: Model, seen: Observation, any_order: bool) -> Iterator[Difference]:
    renaming: dict[int, int] = {}
    intact = True  # every table matched: the renaming is complete, and the facts read through it can be compared
    engine = seen.engine
    if engine is not None:
        yield from counter_differences(model, engine)
        yield from list_differences(model, engine, any_order)
        intact = engine.list_error is None  # a broken list hides the sequences: no renaming can be made
        pairs = paired(model, engine)
        holder: dict[int, tuple[int, int, int]] = {}  # implementation block -> (seq_id, l1, l2) that first mapped it
        for seq_id, seq, state in pairs:
            if len(seq.values) != state.kv_count:
                intact = False
                yield Difference("kv_count", f"seq {seq_id} kv_count", len(seq.values), state.kv_count, seq=seq_id)
                continue
            for difference in _table_differences(seq_id, expected_table(seq.blocks, seq.wild, seq.bare), state.block_table,
                                                 engine.total_local_blocks, renaming, holder):
                intact = False
                yield difference
        if intact:
            yield from _ref_count_differences(model, engine, renaming)
            if seen.pool is not None:
                for seq_id, seq, _ in pairs:
                    yield from _contents_differences(seq_id, seq.values, seq.blocks, seen.pool, renaming)
    if intact and model.pool_size is not None:
        yield from _pool_differences(model, seen, renaming)


def _ref_count_differences(model: Model, engine: EngineState, renaming: dict[int, int]) -> Iterator[Difference]:
    """ref_count, indexed by the implementation's block ids through `renaming`. A block neither side maps keeps
    the model's own count (0, unless the model took over an implementation's stray counts); a block only the
    model maps has moved, so must have count 0 where it is."""
    counts = model.ref_count()
    if len(counts) != len(engine.ref_count):
        yield Difference(REF_COUNT, "ref_count", f"{len(counts)} entries", len(engine.ref_count))
        return
    expected = [0 if block in renaming else count for block, count in enumerate(counts)]
    for block, image in renaming.items():
        expected[image] = counts[block]
    for block, (want, have) in enumerate(zip(expected, engine.ref_count)):
        if want != have:
            yield Difference(REF_COUNT, f"ref_count[{block}]", want, have)


def _table_differences(
    seq_id: int, expected: tuple, got: tuple, total: int, renaming: dict[int, int], holder: dict[int, tuple[int, int, int]]
) -> Iterator[Difference]:
    """One block table up to a renaming of physical blocks, extending `renaming` as it goes; the first
    difference of each L1 slot. The shape is compared exactly; a mapped entry must name a block in range, the
    same implementation block wherever the model has the same block (sharing after fork), and a different one
    wherever the model has a different block (no two model blocks merged into one)."""
    if len(expected) != len(got):
        yield Difference(TABLE_SHAPE, f"seq {seq_id} block_table", f"{len(expected)} L1 slots", len(got), seq=seq_id)
        return
    for l1, (want, have) in enumerate(zip(expected, got)):
        shape = shape_difference(seq_id, l1, want, have)
        if shape:
            yield shape
            continue
        if want is None or want == WILD:  # no table, or the same wild slot: no entry to read
            continue
        for l2, (block, image) in enumerate(zip(want, have)):
            problem = _entry_problem(block, image, total, renaming, holder)
            if problem:
                yield Difference(MAPPING, f"seq {seq_id} block_table[{l1}][{l2}]", problem, image, seq=seq_id)
                break
            if block != UNMAPPED and block not in renaming:
                renaming[block] = image
                holder[image] = (seq_id, l1, l2)


def _entry_problem(block: int, image: int, total: int, renaming: dict[int, int], holder: dict) -> object:
    """What the entry should have been, when it is not what the renaming allows; None when it is."""
    if block == UNMAPPED or image == UNMAPPED:
        if block == image:
            return None
        return UNMAPPED if block == UNMAPPED else renaming.get(block, "a block")
    if not 0 <= image < total:
        return f"a block id in 0..{total - 1}"
    if block in renaming:
        return None if renaming[block] == image else renaming[block]
    if image in holder:
        s, i, j = holder[image]
        return f"a block other than {image} (seq {s} block_table[{i}][{j}] holds {image} for different data)"
    return None


def _token(value: int, block: int, offset: int, names: dict[int, int], total: int) -> tuple:
    slot = magic_slot(value)
    if slot < total * KV_PER_BLOCK and slot % KV_PER_BLOCK == offset:
        source = slot // KV_PER_BLOCK
        if source == block:
            return ("own",)
        if source in names:
            return ("block", names[source])
        return ("free",)
    return ("value", value)


def _slots(pool: bytes, block: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{KV_PER_BLOCK}i", pool, block * BLOCK_SIZE)


def _shown_token(token: tuple, block: int, offset: int) -> str | int:
    """What a model token means in the implementation's numbering, for a message."""
    if token[0] == "own":
        return magic(block * KV_PER_BLOCK + offset)
    if token[0] == "block":
        return magic(token[1] * KV_PER_BLOCK + offset)
    if token[0] == "free":
        return f"a magic number of slot {offset} of a block that is now free"
    return token[1]


def _contents_differences(
    seq_id: int, values: list[int], blocks: list[int], pool: bytes, renaming: dict[int, int]
) -> Iterator[Difference]:
    """A sequence's records read through the implementation's table (equal to the model's under
    `renaming`), each compared as a token; the first wrong one."""
    total = len(pool) // BLOCK_SIZE
    image = {b: b for b in renaming.values()}
    for index, value in enumerate(values):
        block, offset = divmod(index, KV_PER_BLOCK)
        if blocks[block] == UNMAPPED:  # a record with no block, in a state taken over (resync.py): nowhere to read
            continue
        ours, theirs = blocks[block], renaming[blocks[block]]
        (actual,) = struct.unpack_from("<i", pool, (theirs * KV_PER_BLOCK + offset) * KV_SIZE)
        want = _token(value, ours, offset, renaming, total)
        if want != _token(actual, theirs, offset, image, total):
            where = f"seq {seq_id} record {index} (block {theirs})"
            yield Difference(CONTENTS, where, _shown_token(want, theirs, offset), actual, seq=seq_id)
            return


def _pool_differences(model: Model, seen: Observation, renaming: dict[int, int]) -> Iterator[Difference]:
    """The pool up to the renaming. A mapped model block's 16 slots are compared with its implementation
    block's, token by token. Blocks nothing maps are compared as a multiset of their contents: which free
    block is which is exactly what a renaming leaves open (and differs when the allocation order differs),
    while a write into a free block, or a freed block's data lost, still changes the multiset. That no block
    is lost is the exact free_local_blocks and ref_count comparison. Bytes past the last block are compared
    exactly."""
    image = model.pool_image()
    size = pool_size_difference(image, seen)
    if size:
        yield size
        return
    pool = seen.pool
    assert pool is not None
    total = len(image) // BLOCK_SIZE
    names = {b: b for b in renaming.values()}
    for block in sorted(renaming, key=renaming.__getitem__):
        theirs = renaming[block]
        for offset, (want, have) in enumerate(zip(_slots(image, block), _slots(pool, theirs))):
            expected = _token(want, block, offset, renaming, total)
            if expected != _token(have, theirs, offset, names, total):
                at = (theirs * KV_PER_BLOCK + offset) * KV_SIZE
                yield Difference(POOL, f"pool block {theirs} slot {offset} (byte {at})", _shown_token(expected, theirs, offset), have)
                break
    ours = [b for b in range(total) if b not in renaming]
    theirs_free = [b for b in range(total) if b not in names]
    contents = lambda pool, b, r: tuple(_token(v, b, o, r, total) for o, v in enumerate(_slots(pool, b)))  # noqa: E731
    want_free = Counter(contents(image, b, renaming) for b in ours)
    have_free = {b: contents(pool, b, names) for b in theirs_free}
    extra = Counter(have_free.values()) - want_free
    if extra:
        block = next(b for b in theirs_free if have_free[b] in extra)
        missing = list((want_free - Counter(have_free.values())).elements())
        closest = max(missing, key=lambda t: sum(a == b for a, b in zip(t, have_free[block])))
        offset = next(o for o, (a, b) in enumerate(zip(closest, have_free[block])) if a != b)
        (have,) = struct.unpack_from("<i", pool, (block * KV_PER_BLOCK + offset) * KV_SIZE)
        at = (block * KV_PER_BLOCK + offset) * KV_SIZE
        where = f"pool block {block} slot {offset} (byte {at}; a free block, matched with no free block of the specification's)"
        yield Difference(POOL, where, _shown_token(closest[offset], block, offset), have)
    tail = total * BLOCK_SIZE
    if pool[tail:] != image[tail:]:
        at = tail + next(i for i, (w, h) in enumerate(zip(image[tail:], pool[tail:])) if w != h)
        yield pool_byte_difference(image, pool, at)
    yield from guard_differences(seen)
