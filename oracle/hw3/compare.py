"""Compare an implementation's observed state with the model's: every difference, as a structured value.

`differences` yields each way the states differ (see difference.py), from the coarsest fact to the finest, so
the first one is the one a person should read first; `first_difference` is that one, `first_divergence` its
text, e.g. `ref_count[3]: expected 1, got 2`. A directed check keeps the differences whose rule it owns
(rules.py) and reads past the others.

The comparison is exact by default. `modulo` names aspects compared leniently:

- `"block_ids"`: the physical block ids are compared up to a renaming (see renamed.py), for every rule but
  first fit;
- `"list_order"`: the active list's order is not compared (its ids and integrity still are).
"""

import struct
from typing import Iterator

from oracle.difference import Difference
from oracle.hw3.difference import CALL_ALLOCATIONS, ENGINE, LEAK, STATE_CHANGE
from oracle.hw3.exact import engine_differences, expected_engine, guard_differences, pool_differences, table_differences
from oracle.hw3.model import Model
from oracle.hw3.observation import HeapState, Observation
from oracle.hw3.renamed import renamed_differences
from oracle.hw3.spec import KV_PER_BLOCK, KV_SIZE


ASPECTS = frozenset({"block_ids", "list_order"})


def differences(
    model: Model, seen: Observation, failed: bool, *, modulo: frozenset[str] = frozenset()
) -> Iterator[Difference]:
    """Every way `seen` differs from `model`, coarsest first (lazily: take the first and nothing more is done).

    `failed` says the model expects the call to fail, in which case it must not have allocated either.
    `modulo` names the aspects (of ASPECTS) compared leniently; by default everything is compared exactly.
    """
    unknown = set(modulo) - ASPECTS
    if unknown:
        raise ValueError(f"unknown aspect(s) {sorted(unknown)}; known: {sorted(ASPECTS)}")
    if seen.engine is None:
        if model.live:
            yield Difference(ENGINE, "engine", "a live engine", "none")
            return
    elif not model.live:
        yield Difference(ENGINE, "engine", "NULL", "a live engine")
        return
    elif "block_ids" not in modulo:
        yield from engine_differences(model, seen.engine, seen.pool, "list_order" in modulo)
    if "block_ids" in modulo:
        yield from renamed_differences(model, seen, "list_order" in modulo)
    elif model.pool_size is not None:
        yield from pool_differences(model.pool_image(), seen)
    if seen.heap is not None:
        yield from _heap_differences(model, seen.heap, failed)


def first_difference(
    model: Model, seen: Observation, failed: bool, *, modulo: frozenset[str] = frozenset()
) -> Difference | None:
    return next(differences(model, seen, failed, modulo=modulo), None)


def agrees(model: Model, seen: Observation, failed: bool) -> bool:
    """Whether `seen` is exactly the state the model expects: `first_difference` is None exactly when this is True
    (the machine asks this after every call, and `first_difference` only when it is False). Compared whole, in
    the order nothing: the engine against the one the model implies, the pool against its image byte for byte
    (which, the model's records being its image read through its own mapping, settles every record), the guard
    zones and the heap."""
    if (seen.engine is None) == model.live:
        return False
    if seen.engine is not None and seen.engine != expected_engine(model):
        return False
    if model.pool_size is not None and (seen.pool != model.pool_image() or next(guard_differences(seen), None)):
        return False
    return seen.heap is None or next(_heap_differences(model, seen.heap, failed), None) is None


def first_divergence(
    model: Model, seen: Observation, failed: bool, *, modulo: frozenset[str] = frozenset()
) -> str | None:
    """The text of the first difference; None when the states agree."""
    difference = first_difference(model, seen, failed, modulo=modulo)
    return None if difference is None else str(difference)


def _heap_differences(model: Model, heap: HeapState, failed: bool) -> Iterator[Difference]:
    if failed and heap.call_allocations:
        yield Difference(CALL_ALLOCATIONS, "heap", 0, heap.call_allocations)
    if not model.live and heap.live_blocks:
        yield Difference(LEAK, "heap", "every allocation freed",
                         f"{heap.live_blocks} block(s) ({heap.live_bytes} bytes) still live")


def state_changes(before: Observation, after: Observation) -> Iterator[Difference]:
    """How the implementation's own state changed between two observations.

    A call the specification says fails must leave no trace. Compared with the model up to a renaming, a
    failing call that moved data to other blocks or reordered the list would pass; compared with the
    implementation's state just before the call, it does not. Heap accounting is not compared here."""
    b, a = before.engine, after.engine
    change = lambda where, x, y, seq=None: Difference(STATE_CHANGE, where, x, y, seq=seq)  # noqa: E731
    if (b is None) != (a is None):
        yield change("engine", "NULL" if b is None else "live", "NULL" if a is None else "live")
    if b is not None and a is not None and b != a:
        for what, x, y in (
            ("total_local_blocks", b.total_local_blocks, a.total_local_blocks),
            ("free_local_blocks", b.free_local_blocks, a.free_local_blocks),
        ):
            if x != y:
                yield change(what, x, y)
        if len(b.ref_count) != len(a.ref_count):
            yield change("ref_count", f"{len(b.ref_count)} entries", len(a.ref_count))
        elif b.ref_count != a.ref_count:
            block = next(i for i, (x, y) in enumerate(zip(b.ref_count, a.ref_count)) if x != y)
            yield change(f"ref_count[{block}]", b.ref_count[block], a.ref_count[block])
        if b.list_error != a.list_error:
            yield change("active list", b.list_error or "intact", a.list_error or "intact")
        ids = lambda e: [s.seq_id for s in e.sequences]  # noqa: E731
        if ids(b) != ids(a):
            yield change("active list", ids(b), ids(a))
        for x, y in zip(b.sequences, a.sequences):
            if x.kv_count != y.kv_count:
                yield change(f"seq {x.seq_id} kv_count", x.kv_count, y.kv_count, x.seq_id)
            for d in table_differences(x.seq_id, x.block_table, y.block_table):
                yield change(d.location, d.expected, d.got, x.seq_id)
    if before.pool is not None and after.pool is not None and before.pool != after.pool:
        at = next(i for i, (x, y) in enumerate(zip(before.pool, after.pool)) if x != y)
        block, offset = divmod(at // KV_SIZE, KV_PER_BLOCK)
        x, y = (struct.unpack_from("<i", p, at // KV_SIZE * KV_SIZE)[0] if at // KV_SIZE * KV_SIZE + KV_SIZE <= len(p)
                else p[at] for p in (before.pool, after.pool))
        yield change(f"pool block {block} slot {offset} (byte {at})", x, y)


def state_change(before: Observation, after: Observation) -> str | None:
    """The text of the first way a failing call changed the state; None when it changed nothing."""
    difference = next(state_changes(before, after), None)
    return None if difference is None else str(difference)
