"""Compare an implementation's observed state with the model's, and name the first difference.

Each message names what differs and both values, in the implementation's own terms, e.g.
`ref_count[3]: expected 1, got 2`. Checks run from the coarsest fact to the finest, so the first
message is the one a person should read first.
"""

import struct

from oracle.hw3.model import Model
from oracle.hw3.observation import EngineState, HeapState, Observation
from oracle.hw3.pool import GUARD
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


def expected_table(blocks: list[int]) -> tuple[tuple[int, ...] | None, ...]:
    """The L1/L2 shape a mapping implies: an L2 table exactly where some entry of it is mapped."""
    table: list[tuple[int, ...] | None] = []
    for l1 in range(L1_PT_SIZE):
        chunk = blocks[l1 * L2_PT_SIZE : (l1 + 1) * L2_PT_SIZE]
        table.append(tuple(chunk) + (UNMAPPED,) * (L2_PT_SIZE - len(chunk)) if chunk else None)
    return tuple(table)


def first_divergence(model: Model, seen: Observation, failed: bool) -> str | None:
    """The first way `seen` differs from `model`; None when they agree.

    `failed` says the model expects the call to fail, in which case it must not have allocated either.
    """
    if seen.engine is None:
        if model.live:
            return "engine: expected a live engine, got none"
    elif not model.live:
        return "engine: expected NULL, got a live engine"
    else:
        problem = _engine_divergence(model, seen.engine, seen.pool)
        if problem:
            return problem
    if model.pool_size is not None:
        problem = _pool_divergence(model.pool_image(), seen)
        if problem:
            return problem
    if seen.heap is not None:
        return _heap_divergence(model, seen.heap, failed)
    return None


def _expect(what: str, expected: object, got: object) -> str | None:
    return None if expected == got else f"{what}: expected {expected}, got {got}"


def _engine_divergence(model: Model, engine: EngineState, pool: bytes | None) -> str | None:
    problem = _expect("total_local_blocks", model.total, engine.total_local_blocks) or _expect(
        "free_local_blocks", model.free_blocks(), engine.free_local_blocks
    )
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


def _table_divergence(seq_id: int, expected: tuple, got: tuple) -> str | None:
    if expected == got:
        return None
    for l1, (want, have) in enumerate(zip(expected, got)):
        if want == have:
            continue
        if want is None or have is None:
            shape = lambda t: "NULL" if t is None else "an L2 table"  # noqa: E731
            return f"seq {seq_id} block_table[{l1}]: expected {shape(want)}, got {shape(have)}"
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
