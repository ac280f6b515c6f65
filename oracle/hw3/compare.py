"""Compare an implementation's observed state with the model's, and name the first difference.

Each message names what differs and both values, in the implementation's own terms, e.g.
`ref_count[3]: expected 1, got 2`. Checks run from the coarsest fact to the finest, so the first
message is the one a person should read first.

The comparison is exact by default. A directed check that does not own a rule can ask for two aspects to be
compared leniently (`modulo`), so that one bug costs points on the item of the rule it breaks only:

- `"block_ids"`: the physical block ids are compared up to a renaming (see `_renaming`), for every rule but
  first fit;
- `"list_order"`: the active list is compared as a collection of ids, for every rule but tail insertion. Its
  integrity (prev/next, circularity) is still checked exactly.
"""

import struct
from collections import Counter

from oracle.hw3.model import Model
from oracle.hw3.observation import EngineState, HeapState, Observation
from oracle.hw3.pool import GUARD, magic, magic_slot
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


def expected_table(blocks: list[int]) -> tuple[tuple[int, ...] | None, ...]:
    """The L1/L2 shape a mapping implies: an L2 table exactly where some entry of it is mapped."""
    table: list[tuple[int, ...] | None] = []
    for l1 in range(L1_PT_SIZE):
        chunk = blocks[l1 * L2_PT_SIZE : (l1 + 1) * L2_PT_SIZE]
        table.append(tuple(chunk) + (UNMAPPED,) * (L2_PT_SIZE - len(chunk)) if chunk else None)
    return tuple(table)


ASPECTS = frozenset({"block_ids", "list_order"})


def first_divergence(
    model: Model, seen: Observation, failed: bool, *, modulo: frozenset[str] = frozenset()
) -> str | None:
    """The first way `seen` differs from `model`; None when they agree.

    `failed` says the model expects the call to fail, in which case it must not have allocated either.
    `modulo` names the aspects (of ASPECTS) compared leniently; by default everything is compared exactly.
    """
    unknown = set(modulo) - ASPECTS
    if unknown:
        raise ValueError(f"unknown aspect(s) {sorted(unknown)}; known: {sorted(ASPECTS)}")
    renaming: dict[int, int] = {}  # model block -> implementation block, under "block_ids"
    if seen.engine is None:
        if model.live:
            return "engine: expected a live engine, got none"
    elif not model.live:
        return "engine: expected NULL, got a live engine"
    elif modulo:
        problem = _engine_divergence_modulo(model, seen.engine, seen.pool, modulo, renaming)
        if problem:
            return problem
    else:
        problem = _engine_divergence(model, seen.engine, seen.pool)
        if problem:
            return problem
    if model.pool_size is not None:
        if "block_ids" in modulo:
            problem = _renamed_pool_divergence(model, seen, renaming)
        else:
            problem = _pool_divergence(model.pool_image(), seen)
        if problem:
            return problem
    if seen.heap is not None:
        return _heap_divergence(model, seen.heap, failed)
    return None


def _expect(what: str, expected: object, got: object) -> str | None:
    return None if expected == got else f"{what}: expected {expected}, got {got}"


def _engine_divergence(model: Model, engine: EngineState, pool: bytes | None) -> str | None:
    problem = _expect("total_local_blocks", model.total, engine.total_local_blocks) or _free_divergence(model, engine)
    if problem:
        return problem
    ref_count = tuple(model.ref_count())
    if ref_count != engine.ref_count:
        if len(ref_count) != len(engine.ref_count):
            return f"ref_count: expected {len(ref_count)} entries, got {len(engine.ref_count)}"
        block = next(b for b, (e, g) in enumerate(zip(ref_count, engine.ref_count)) if e != g)
        return f"ref_count[{block}]: expected {ref_count[block]}, got {engine.ref_count[block]}"
    if engine.list_error:
        return f"active list broken: {engine.list_error}"
    problem = _expect("active list", list(model.sequences), [s.seq_id for s in engine.sequences])
    if problem:
        return problem
    for (seq_id, seq), state in zip(model.sequences.items(), engine.sequences):
        problem = _expect(f"seq {seq_id} kv_count", len(seq.values), state.kv_count) or _table_divergence(
            seq_id, expected_table(seq.blocks), state.block_table
        )
        if problem:
            return problem
        if pool is not None:
            problem = _contents_divergence(seq_id, seq.values, seq.blocks, pool)
            if problem:
                return problem
    return None


CONSISTENT_FREE_COUNT = "it matches your ref_count array"


def _free_divergence(model: Model, engine: EngineState) -> str | None:
    """free_local_blocks against the model; when it still equals the implementation's own count of blocks
    with ref_count 0, Constraint 5 held and the call took or released the wrong number of blocks."""
    problem = _expect("free_local_blocks", model.free_blocks(), engine.free_local_blocks)
    if problem and engine.ref_count.count(0) == engine.free_local_blocks:
        problem += f" ({CONSISTENT_FREE_COUNT}: the call took or released the wrong number of blocks)"
    return problem


def _l2_length_divergence(seq_id: int, l1: int, want: tuple, have: tuple) -> str | None:
    return None if len(want) == len(have) else f"seq {seq_id} block_table[{l1}]: expected {len(want)} L2 entries, got {len(have)}"


def _table_divergence(seq_id: int, expected: tuple, got: tuple) -> str | None:
    if expected == got:
        return None
    for l1, (want, have) in enumerate(zip(expected, got)):
        if want == have:
            continue
        if want is None or have is None:
            shape = lambda t: "NULL" if t is None else "an L2 table"  # noqa: E731
            return f"seq {seq_id} block_table[{l1}]: expected {shape(want)}, got {shape(have)}"
        if problem := _l2_length_divergence(seq_id, l1, want, have):
            return problem
        l2 = next(i for i, (w, h) in enumerate(zip(want, have)) if w != h)
        return f"seq {seq_id} block_table[{l1}][{l2}]: expected {want[l2]}, got {have[l2]}"
    return f"seq {seq_id} block_table: expected {len(expected)} L1 slots, got {len(got)}"


def _contents_divergence(seq_id: int, values: list[int], blocks: list[int], pool: bytes) -> str | None:
    """Read the sequence through the mapping (already checked equal to the implementation's) and the pool."""
    got = b"".join(pool[b * BLOCK_SIZE : (b + 1) * BLOCK_SIZE] for b in blocks)[: len(values) * KV_SIZE]
    want = struct.pack(f"<{len(values)}i", *values)
    if got == want:
        return None
    index = next(i for i in range(len(values)) if got[i * KV_SIZE : (i + 1) * KV_SIZE] != want[i * KV_SIZE : (i + 1) * KV_SIZE])
    (actual,) = struct.unpack_from("<i", got, index * KV_SIZE)
    return f"seq {seq_id} record {index} (block {blocks[index // KV_PER_BLOCK]}): expected {values[index]}, got {actual}"


def _pool_divergence(image: bytes, seen: Observation) -> str | None:
    if seen.pool is None:
        return "pool: expected the caller's pool, got none"
    if len(seen.pool) != len(image):
        return f"pool: expected {len(image)} bytes, got {len(seen.pool)}"
    if seen.pool != image:
        at = next(i for i, (w, h) in enumerate(zip(image, seen.pool)) if w != h)
        slot = at // KV_SIZE
        if (slot + 1) * KV_SIZE > len(image):  # the trailing partial slot no block covers
            return f"pool byte {at} (past the last block): expected {image[at]:#04x}, got {seen.pool[at]:#04x}"
        block, offset = divmod(slot, KV_PER_BLOCK)
        want, have = (struct.unpack_from("<i", buf, slot * KV_SIZE)[0] for buf in (image, seen.pool))
        return f"pool block {block} slot {offset} (byte {at}): expected {want}, got {have}"
    return _guard_divergence(seen)


def _guard_divergence(seen: Observation) -> str | None:
    for name, guard in (("before", seen.guard_before), ("after", seen.guard_after)):
        if guard and guard != GUARD[: len(guard)]:
            at = next(i for i, b in enumerate(guard) if b != GUARD[i])
            return f"guard zone {name} the pool: byte {at} overwritten with {guard[at]:#04x}"
    return None


def _heap_divergence(model: Model, heap: HeapState, failed: bool) -> str | None:
    if failed and heap.call_allocations:
        return f"heap: a failing call must allocate nothing, it allocated {heap.call_allocations} time(s)"
    if not model.live and heap.live_blocks:
        return f"heap: expected every allocation freed, {heap.live_blocks} block(s) ({heap.live_bytes} bytes) still live"
    return None


# ---- lenient comparison (modulo) ------------------------------------------------------------------------


def _engine_divergence_modulo(
    model: Model, engine: EngineState, pool: bytes | None, modulo: frozenset[str], renaming: dict[int, int]
) -> str | None:
    """`_engine_divergence` with the aspects in `modulo` compared leniently. Under "block_ids" the tables
    are compared first, since they define the renaming that ref_count and the contents are compared through;
    `renaming` is filled in for the pool comparison."""
    problem = _expect("total_local_blocks", model.total, engine.total_local_blocks) or _free_divergence(model, engine)
    if problem:
        return problem
    by_ids = "block_ids" in modulo
    if not by_ids:
        problem = _ref_count_divergence(model, engine, None)
        if problem:
            return problem
    if engine.list_error:
        return f"active list broken: {engine.list_error}"
    ids = [s.seq_id for s in engine.sequences]
    if "list_order" in modulo:
        want, have = sorted(model.sequences), sorted(ids)
        if want != have:
            return f"active list: expected the ids {want} in any order, got {have}"
        states = {s.seq_id: s for s in engine.sequences}
        pairs = [(seq_id, seq, states[seq_id]) for seq_id, seq in model.sequences.items()]
    else:
        problem = _expect("active list", list(model.sequences), ids)
        if problem:
            return problem
        pairs = [(seq_id, seq, state) for (seq_id, seq), state in zip(model.sequences.items(), engine.sequences)]
    holder: dict[int, tuple[int, int, int]] = {}  # implementation block -> (seq_id, l1, l2) that first mapped it
    for seq_id, seq, state in pairs:
        problem = _expect(f"seq {seq_id} kv_count", len(seq.values), state.kv_count)
        if not problem:
            want = expected_table(seq.blocks)
            problem = (
                _renamed_table_divergence(seq_id, want, state.block_table, engine.total_local_blocks, renaming, holder)
                if by_ids
                else _table_divergence(seq_id, want, state.block_table)
            )
        if problem:
            return problem
    if by_ids:
        problem = _ref_count_divergence(model, engine, renaming)
        if problem:
            return problem
    if pool is not None:
        for seq_id, seq, _ in pairs:
            problem = (
                _renamed_contents_divergence(seq_id, seq.values, seq.blocks, pool, renaming)
                if by_ids
                else _contents_divergence(seq_id, seq.values, seq.blocks, pool)
            )
            if problem:
                return problem
    return None


def _ref_count_divergence(model: Model, engine: EngineState, renaming: dict[int, int] | None) -> str | None:
    """ref_count, indexed by the implementation's block ids: through `renaming` when given (a block nothing
    maps must have count 0), else exactly."""
    counts = model.ref_count()
    if len(counts) != len(engine.ref_count):
        return f"ref_count: expected {len(counts)} entries, got {len(engine.ref_count)}"
    if renaming is None:
        expected = counts
    else:
        expected = [0] * len(counts)
        for block, image in renaming.items():
            expected[image] = counts[block]
    for block, (want, have) in enumerate(zip(expected, engine.ref_count)):
        if want != have:
            return f"ref_count[{block}]: expected {want}, got {have}"
    return None


def _renamed_table_divergence(
    seq_id: int,
    expected: tuple,
    got: tuple,
    total: int,
    renaming: dict[int, int],
    holder: dict[int, tuple[int, int, int]],
) -> str | None:
    """Compares one block table up to a renaming of physical blocks, extending `renaming` (model block ->
    implementation block) as it goes. The shape (which L1 slots hold an L2 table, which L2 entries are -1)
    is compared exactly; a mapped entry must name a block in range, the same implementation block wherever
    the model has the same block (sharing after fork), and a different one wherever the model has a
    different block (no two model blocks merged into one)."""
    if len(expected) != len(got):
        return f"seq {seq_id} block_table: expected {len(expected)} L1 slots, got {len(got)}"
    for l1, (want, have) in enumerate(zip(expected, got)):
        if want is None or have is None:
            if (want is None) != (have is None):
                shape = lambda t: "NULL" if t is None else "an L2 table"  # noqa: E731
                return f"seq {seq_id} block_table[{l1}]: expected {shape(want)}, got {shape(have)}"
            continue
        if problem := _l2_length_divergence(seq_id, l1, want, have):
            return problem
        for l2, (block, image) in enumerate(zip(want, have)):
            where = f"seq {seq_id} block_table[{l1}][{l2}]"
            if block == UNMAPPED or image == UNMAPPED:
                if block != image:
                    shown = UNMAPPED if block == UNMAPPED else renaming.get(block, "a block")
                    return f"{where}: expected {shown}, got {image}"
                continue
            if not 0 <= image < total:
                return f"{where}: expected a block id in 0..{total - 1}, got {image}"
            if block in renaming:
                if renaming[block] != image:
                    return f"{where}: expected {renaming[block]}, got {image}"
                continue
            if image in holder:
                s, i, j = holder[image]
                return (f"{where}: expected a block other than {image} (seq {s} block_table[{i}][{j}] holds "
                        f"{image} for different data), got {image}")
            renaming[block] = image
            holder[image] = (seq_id, l1, l2)
    return None


# Under "block_ids" the pool's magic numbers need care: each slot starts out holding magic(slot), so a block's
# untouched slots name the block itself, and a copy-on-write copy carries the old block's numbers elsewhere.
# A value is therefore compared as a token: an aligned magic number of the block that holds it ("own"), of
# a block under the renaming ("block", its implementation id), of a block nothing maps now ("free": the
# renaming says nothing about where that block's counterpart is, since the correspondence of free blocks
# changes as blocks are freed and reused); anything else is compared as the value itself.


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


def _shown_token(token: tuple, block: int, offset: int) -> str:
    """What a model token means in the implementation's numbering, for a message."""
    if token[0] == "own":
        return str(magic(block * KV_PER_BLOCK + offset))
    if token[0] == "block":
        return str(magic(token[1] * KV_PER_BLOCK + offset))
    if token[0] == "free":
        return f"a magic number of slot {offset} of a block that is now free"
    return str(token[1])


def _renamed_contents_divergence(
    seq_id: int, values: list[int], blocks: list[int], pool: bytes, renaming: dict[int, int]
) -> str | None:
    """A sequence's records read through the implementation's table (equal to the model's under
    `renaming`), each compared as a token."""
    total = len(pool) // BLOCK_SIZE
    image = {b: b for b in renaming.values()}
    for index, value in enumerate(values):
        block, offset = divmod(index, KV_PER_BLOCK)
        ours, theirs = blocks[block], renaming[blocks[block]]
        (actual,) = struct.unpack_from("<i", pool, (theirs * KV_PER_BLOCK + offset) * KV_SIZE)
        want = _token(value, ours, offset, renaming, total)
        if want != _token(actual, theirs, offset, image, total):
            return f"seq {seq_id} record {index} (block {theirs}): expected {_shown_token(want, theirs, offset)}, got {actual}"
    return None


def _renamed_pool_divergence(model: Model, seen: Observation, renaming: dict[int, int]) -> str | None:
    """The pool up to the renaming. A mapped model block's 16 slots are compared with its implementation
    block's, token by token. Blocks nothing maps are compared as a multiset of their contents: which free
    block is which is exactly what a renaming leaves open (and differs when the allocation order differs),
    while a write into a free block, or a freed block's data lost, still changes the multiset. That no block
    is lost is the exact free_local_blocks and ref_count comparison. Bytes past the last block are compared
    exactly."""
    image = model.pool_image()
    if seen.pool is None:
        return "pool: expected the caller's pool, got none"
    if len(seen.pool) != len(image):
        return f"pool: expected {len(image)} bytes, got {len(seen.pool)}"
    total = len(image) // BLOCK_SIZE
    names = {b: b for b in renaming.values()}
    for block in sorted(renaming, key=renaming.__getitem__):
        theirs = renaming[block]
        for offset, (want, have) in enumerate(zip(_slots(image, block), _slots(seen.pool, theirs))):
            expected = _token(want, block, offset, renaming, total)
            if expected != _token(have, theirs, offset, names, total):
                at = (theirs * KV_PER_BLOCK + offset) * KV_SIZE
                return f"pool block {theirs} slot {offset} (byte {at}): expected {_shown_token(expected, theirs, offset)}, got {have}"
    ours = [b for b in range(total) if b not in renaming]
    theirs_free = [b for b in range(total) if b not in names]
    contents = lambda pool, b, r: tuple(_token(v, b, o, r, total) for o, v in enumerate(_slots(pool, b)))  # noqa: E731
    want_free = Counter(contents(image, b, renaming) for b in ours)
    have_free = {b: contents(seen.pool, b, names) for b in theirs_free}
    extra = Counter(have_free.values()) - want_free
    if extra:
        block = next(b for b in theirs_free if have_free[b] in extra)
        missing = list((want_free - Counter(have_free.values())).elements())
        closest = max(missing, key=lambda t: sum(a == b for a, b in zip(t, have_free[block])))
        offset = next(o for o, (a, b) in enumerate(zip(closest, have_free[block])) if a != b)
        (have,) = struct.unpack_from("<i", seen.pool, (block * KV_PER_BLOCK + offset) * KV_SIZE)
        at = (block * KV_PER_BLOCK + offset) * KV_SIZE
        return (f"pool block {block} slot {offset} (byte {at}; a free block, matched with no free block of the "
                f"specification's): expected {_shown_token(closest[offset], block, offset)}, got {have}")
    tail = total * BLOCK_SIZE
    if seen.pool[tail:] != image[tail:]:
        at = tail + next(i for i, (w, h) in enumerate(zip(image[tail:], seen.pool[tail:])) if w != h)
        return f"pool byte {at} (past the last block): expected {image[at]:#04x}, got {seen.pool[at]:#04x}"
    return _guard_divergence(seen)


def state_change(before: Observation, after: Observation) -> str | None:
    """How the implementation's own state changed between two observations; None when it did not.

    A call the specification says fails must leave no trace. Compared with the model up to a renaming, a
    failing call that moved data to other blocks or reordered the list would pass; compared with the
    implementation's state just before the call, it does not. Heap accounting is not compared here."""
    b, a = before.engine, after.engine
    lead = "a failing call changed the state:"
    if (b is None) != (a is None):
        return f"{lead} engine: before {'NULL' if b is None else 'live'}, after {'NULL' if a is None else 'live'}"
    if b is not None and a is not None and b != a:
        for what, x, y in (
            ("total_local_blocks", b.total_local_blocks, a.total_local_blocks),
            ("free_local_blocks", b.free_local_blocks, a.free_local_blocks),
        ):
            if x != y:
                return f"{lead} {what}: before {x}, after {y}"
        if b.ref_count != a.ref_count:
            if len(b.ref_count) != len(a.ref_count):
                return f"{lead} ref_count: before {len(b.ref_count)} entries, after {len(a.ref_count)}"
            block = next(i for i, (x, y) in enumerate(zip(b.ref_count, a.ref_count)) if x != y)
            return f"{lead} ref_count[{block}]: before {b.ref_count[block]}, after {a.ref_count[block]}"
        if b.list_error != a.list_error:
            return f"{lead} active list: before {b.list_error or 'intact'}, after {a.list_error or 'intact'}"
        ids = lambda e: [s.seq_id for s in e.sequences]  # noqa: E731
        if ids(b) != ids(a):
            return f"{lead} active list: before {ids(b)}, after {ids(a)}"
        for x, y in zip(b.sequences, a.sequences):
            if x.kv_count != y.kv_count:
                return f"{lead} seq {x.seq_id} kv_count: before {x.kv_count}, after {y.kv_count}"
            problem = _table_divergence(x.seq_id, x.block_table, y.block_table)
            if problem:
                return f"{lead} {problem.replace(': expected ', ': before ').replace(', got ', ', after ')}"
    if before.pool is not None and after.pool is not None and before.pool != after.pool:
        at = next(i for i, (x, y) in enumerate(zip(before.pool, after.pool)) if x != y)
        block, offset = divmod(at // KV_SIZE, KV_PER_BLOCK)
        x, y = (struct.unpack_from("<i", p, at // KV_SIZE * KV_SIZE)[0] if at // KV_SIZE * KV_SIZE + KV_SIZE <= len(p)
                else p[at] for p in (before.pool, after.pool))
        return f"{lead} pool block {block} slot {offset} (byte {at}): before {x}, after {y}"
    return None
