"""Broken: free_sequence stops at the first NULL L1 slot. Invisible through the API (L2 tables are always
contiguous from slot 0), so test_engine_rules checks it white-box; it is deliberately not in the teeth run."""

from engine import llm_memory as base
from engine.llm_memory import L1_PT_SIZE, UNMAPPED, append_kv, create_sequence, fork_sequence, llm_destroy, llm_init  # noqa: F401


def _release_blocks(engine, seq):
    for l2_table in seq.block_table:
        if l2_table is None:
            break  # BUG: a NULL slot does not end the table
        for block in l2_table:
            if block != UNMAPPED:
                engine.release_block(block)
    seq.block_table = [None] * L1_PT_SIZE


def free_sequence(engine, seq_id):
    if engine is None:
        return -1
    engine = base._engine(engine)
    base._int32("seq_id", seq_id)
    seq = engine.find(seq_id)
    if seq is None:
        return -1
    seq.node.unlink()
    _release_blocks(engine, seq)
    return 0
