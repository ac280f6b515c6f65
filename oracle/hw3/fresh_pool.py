"""A second opinion on a create_sequence or append_kv that left a block unmapped where the model maps one: was
its count of blocks wrong (the call's own task), or did it ask for every block and its search for a free one
find none, though ref_count shows one free (first fit's)? From the tables alone the two look alike, so each
witness runs in a fresh process of the implementation, where nothing the program did can reach it:

- the count: the same call on a fresh engine over a large empty pool maps every block it needs;
- the search, on an empty pool: a one-block create on a fresh engine over a pool of the program's size maps
  a block;
- the search, where the call failed: the program replayed through the call, then a one-block create of a new
  id maps no block, though the engine counts a free block and ref_count shows one.

A count bug fails the first witness, or, if it behaves on large pools only, the second or the third (a count
short on the program's pools is short for one block too, or right for it). Only a shortfall that appears
exactly where a search fails (a state-dependent miss of a free block) gets all three, and that is first fit's
bug whatever its code is called."""

from contextlib import closing
from typing import Callable, Sequence

from oracle.difference import Difference
from oracle.hw3.adapters import Adapter
from oracle.hw3.difference import MAPPING
from oracle.hw3.observation import EngineState, ImplementationFailure
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, UNMAPPED
from oracle.hw3.steps import call_on
from oracle.program import Step

FRESH_BLOCKS = 4096  # a 256 KiB pool: room for the longest sequence (256 blocks) many times over


def search_failed(fresh: Callable[[], Adapter], found: list[Difference], steps: Sequence[Step], records: int,
                  copied: bool) -> bool:
    """Whether the last of `steps` (a create or append of `records` records after it, which `copied` a shared
    block in the model) left a block unmapped because its search for a free block failed (the three witnesses
    above)."""
    if not left_unmapped(found):
        return False
    last, inits = steps[-1], [step for step in steps if step.op == "llm_init"]
    if not inits or inits[-1].null:
        return False
    return (maps_on_a_fresh_pool(fresh, last.op, last.args[0], records, copied)
            and _one_block(fresh, [inits[-1]]) is True and _one_block(fresh, steps) is False)


def left_unmapped(found: list[Difference]) -> bool:
    """Whether a call left an entry -1 where the model mapped a block."""
    return any(d.aspect == MAPPING and d.got == UNMAPPED for d in found)


def maps_on_a_fresh_pool(fresh: Callable[[], Adapter], op: str, seq_id: int, records: int, copied: bool) -> bool:
    """Whether the call, on a fresh engine over an empty pool of FRESH_BLOCKS blocks, leaves sequence `seq_id`
    with `records` records (after it) mapping one distinct block per 16 records from logical block 0, and
    nothing more. An append is made to a sequence created there with one record fewer, and forked first
    when the model's append `copied` a shared block."""
    with closing(fresh()) as adapter:
        try:
            engine = adapter.llm_init(FRESH_BLOCKS * BLOCK_SIZE)
            if engine is None or adapter.create_sequence(engine, seq_id, records - (op == "append_kv")) is None:
                return False
            if copied and adapter.fork_sequence(engine, seq_id, seq_id + 1) is None:
                return False
            if op == "append_kv" and adapter.append_kv(engine, seq_id, 0) != 0:
                return False
            seen = adapter.observe(engine).engine
        except ImplementationFailure:
            return False
    entries = _entries(seen, seq_id)
    needed = -(-records // KV_PER_BLOCK)
    mapped = entries[:needed]
    return (len(mapped) == needed and all(0 <= block < FRESH_BLOCKS for block in mapped)
            and len(set(mapped)) == needed and all(block == UNMAPPED for block in entries[needed:]))


def _one_block(fresh: Callable[[], Adapter], steps: Sequence[Step]) -> bool | None:
    """After `steps` in a fresh process, whether create_sequence of one record under a new id maps a block (a
    live sequence whose block_table[0][0] is a block of the pool). None when that asks nothing of a search:
    the steps or the create crashed, or the engine had no free block by its own count and ref_count."""
    with closing(fresh()) as adapter:
        try:
            engine: object = None
            for step in steps:
                engine, _ = call_on(adapter, step, engine)
            before = adapter.observe(engine).engine
            if before is None or before.free_local_blocks < 1 or 0 not in before.ref_count[:before.total_local_blocks]:
                return None
            seq_id = max((s.seq_id for s in before.sequences), default=-1) + 1
            if adapter.create_sequence(engine, seq_id, 1) is None:
                return False
            after = adapter.observe(engine).engine
        except ImplementationFailure:
            return None
    entries = _entries(after, seq_id)
    return bool(entries) and after is not None and 0 <= entries[0] < after.total_local_blocks


def _entries(engine: EngineState | None, seq_id: int) -> list[int]:
    """The L2 entries of sequence `seq_id`, in logical order (-1 for a NULL L2 table); empty when it is not live."""
    state = next((s for s in engine.sequences if s.seq_id == seq_id), None) if engine is not None else None
    if state is None:
        return []
    return [block for l2 in state.block_table for block in (l2 if l2 else (UNMAPPED,) * L2_PT_SIZE)]
