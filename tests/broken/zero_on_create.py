"""Broken: create_sequence zeroes every block it maps (the spec forbids writing the pool on create)."""

from engine import llm_memory as base
from engine.llm_memory import BLOCK_SIZE, append_kv, fork_sequence, free_sequence, llm_destroy, llm_init  # noqa: F401


def create_sequence(engine, seq_id, initial_kv_len):
    seq = base.create_sequence(engine, seq_id, initial_kv_len)
    for l2_table in [] if seq is None else filter(None, seq.block_table):
        for block in l2_table:
            if block != base.UNMAPPED:
                engine.pool_base_ptr[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE] = bytes(BLOCK_SIZE)  # BUG: memset
    return seq
