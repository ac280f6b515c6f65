"""Broken: fork_sequence shares the parent's blocks without incrementing their ref_count."""

from engine.llm_memory import (  # noqa: F401
    Sequence, _engine, _int32, append_kv, create_sequence, free_sequence, llm_destroy, llm_init,
)


def fork_sequence(engine, parent_seq_id, new_seq_id):
    if engine is None:
        return None
    engine = _engine(engine)
    _int32("parent_seq_id", parent_seq_id)
    _int32("new_seq_id", new_seq_id)
    parent = engine.find(parent_seq_id)
    if parent is None or engine.find(new_seq_id) is not None:
        return None
    child = Sequence(new_seq_id, parent.kv_count)
    for l1, l2_table in enumerate(parent.block_table):
        if l2_table is not None:
            child.block_table[l1] = list(l2_table)  # BUG: no ref_count[block] += 1
    child.node.add_tail(engine.active_seqs)
    return child
