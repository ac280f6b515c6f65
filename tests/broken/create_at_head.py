"""Broken: create_sequence inserts the new sequence at the head of active_seqs instead of the tail."""

from engine import llm_memory as base
from engine.llm_memory import append_kv, fork_sequence, free_sequence, llm_destroy, llm_init  # noqa: F401


def create_sequence(engine, seq_id, initial_kv_len):
    seq = base.create_sequence(engine, seq_id, initial_kv_len)
    if seq is not None:
        seq.node.unlink()
        seq.node.add_tail(engine.active_seqs.next)  # BUG: before the first node, i.e. at the head
    return seq
