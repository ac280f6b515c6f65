"""A second opinion on a create_sequence or append_kv that left a block unmapped where the model maps one: the
same call on a fresh engine over a large empty pool, in a fresh process (nothing the program did before can
reach it). A count bug (too few blocks for the length) maps too few there too: the call's own task. A call
that maps every block there asked for each one, and its search for a free block found none on the pool it
had, though the model found one: first fit is charged too (rules.also_broken). Never instead: a count bug
can behave on a fresh pool only, and must not move its charge to the cheaper item."""

from contextlib import closing
from typing import Callable

from oracle.difference import Difference
from oracle.hw3.adapters import Adapter
from oracle.hw3.difference import MAPPING
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, UNMAPPED

FRESH_BLOCKS = 4096  # a 256 KiB pool: room for the longest sequence (256 blocks) many times over


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
    state = next((s for s in seen.sequences if s.seq_id == seq_id), None) if seen is not None else None
    if state is None:
        return False
    entries = [block for l2 in state.block_table for block in (l2 if l2 else (UNMAPPED,) * L2_PT_SIZE)]
    needed = -(-records // KV_PER_BLOCK)
    mapped = entries[:needed]
    return (all(0 <= block < FRESH_BLOCKS for block in mapped) and len(set(mapped)) == needed
            and all(block == UNMAPPED for block in entries[needed:]))
