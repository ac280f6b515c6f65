"""A second opinion on a create_sequence or append_kv that left a block unmapped where the model maps one: was
its count of blocks wrong (the call's own task), or did it ask for every block and its search for a free one
find none, though ref_count shows one free (first fit's)? From the tables alone the two look alike, so each
witness runs in a fresh process of the implementation, where nothing the program did can reach it:

- the count: the same call on a fresh engine over a large empty pool maps every block it needs;
- the search, on an empty pool: a one-block create on a fresh engine over a pool of the program's size maps
  a block;
- the search, where the call ran: the program replayed up to the call, then as many one-block creates of new
  ids as the blocks the call had to take, map exactly as many blocks as the call did, the first ones: the
  same searches in the same state find the same blocks and miss where the call missed.

A count bug fails the first witness, or, if it behaves on large pools only, the last: the one-block creates
ask for each block and get it. Only a shortfall that follows the pool's state block by block, as a search
does, passes all three, and that is first fit's bug whatever its code is called. The last witness replays
up to the call, not through it, so nothing the call itself did (a flag it set) can take part."""

from contextlib import closing
from typing import Callable, Sequence

from oracle.difference import Difference
from oracle.hw3.adapters import Adapter
from oracle.hw3.difference import MAPPING
from oracle.hw3.observation import EngineState, ImplementationFailure
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, UNMAPPED
from oracle.hw3.step import call_on
from oracle.program import Step

FRESH_BLOCKS = 4096  # a 256 KiB pool: room for the longest sequence (256 blocks) many times over


def search_failed(fresh: Callable[[], Adapter], found: list[Difference], steps: Sequence[Step], records: int,
                  copied: bool, wanted: int, took: int) -> bool:
    """Whether the last of `steps` (a create or append of `records` records after it, which `copied` a shared
    block in the model) left a block unmapped because its search for a free block failed (the three witnesses
    above): it had to take `wanted` blocks and took `took`."""
    if not left_unmapped(found) or not 0 <= took < wanted:
        return False
    last, inits = steps[-1], [step for step in steps if step.op == "llm_init"]
    if not inits or inits[-1].null or last.op == "llm_init":
        return False
    return (maps_on_a_fresh_pool(fresh, last.op, last.args[0], records, copied)
            and _one_block_creates(fresh, [inits[-1]], 1) == [True]
            and _one_block_creates(fresh, steps[:-1], wanted) == [True] * took + [False] * (wanted - took))


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


def _one_block_creates(fresh: Callable[[], Adapter], steps: Sequence[Step], count: int) -> list[bool] | None:
    """After `steps` in a fresh process, `count` create_sequence calls of one record under new ids: whether each
    made a sequence that maps a block of the pool. None when that asks nothing of a search: the steps or a
    create crashed, or the engine had no free block by its own count and ref_count."""
    with closing(fresh()) as adapter:
        try:
            engine: object = None
            for step in steps:
                engine, _ = call_on(adapter, step, engine)
            before = adapter.observe(engine).engine
            if before is None or before.free_local_blocks < 1 or 0 not in before.ref_count[:before.total_local_blocks]:
                return None
            first = max((s.seq_id for s in before.sequences), default=-1) + 1
            made = [adapter.create_sequence(engine, first + i, 1) is not None for i in range(count)]
            after = adapter.observe(engine).engine
        except ImplementationFailure:
            return None
    if after is None:
        return None
    entries = [_entries(after, first + i)[:1] for i in range(count)]
    return [ok and bool(entry) and 0 <= entry[0] < after.total_local_blocks for ok, entry in zip(made, entries)]


def _entries(engine: EngineState | None, seq_id: int) -> list[int]:
    """The L2 entries of sequence `seq_id`, in logical order (-1 for a NULL L2 table); empty when it is not live."""
    state = next((s for s in engine.sequences if s.seq_id == seq_id), None) if engine is not None else None
    if state is None:
        return []
    return [block for l2 in state.block_table for block in (l2 if l2 else (UNMAPPED,) * L2_PT_SIZE)]
