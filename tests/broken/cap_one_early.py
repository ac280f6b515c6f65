"""Broken: append_kv refuses at 4095 records instead of 4096 (off-by-one cap)."""

from engine import llm_memory as base
from oracle.hw3.spec import MAX_KV
from engine.llm_memory import create_sequence, fork_sequence, free_sequence, llm_destroy, llm_init  # noqa: F401


def append_kv(engine, seq_id, kv_data):
    seq = None if engine is None else engine.find(seq_id)
    if seq is not None and seq.kv_count >= MAX_KV - 1:  # BUG: should be MAX_KV
        return -1
    return base.append_kv(engine, seq_id, kv_data)
