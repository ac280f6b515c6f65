"""Broken: fork_sequence stops copying at the first NULL L1 slot. Invisible through the API (L2 tables are
always contiguous from slot 0), so the grader's l1_traversal item checks it white-box (l1_gap_fork); it is
deliberately not in the teeth run."""

from engine import llm_memory as base
from engine.llm_memory import append_kv, create_sequence, free_sequence, llm_destroy, llm_init  # noqa: F401


def fork_sequence(engine, parent_seq_id, new_seq_id):
    if engine is None:
        return None
    engine = base._engine(engine)
    base._int32("parent_seq_id", parent_seq_id)
    base._int32("new_seq_id", new_seq_id)
    parent = engine.find(parent_seq_id)
    if parent is None or engine.find(new_seq_id) is not None:
        return None

    child = base.Sequence(new_seq_id, parent.kv_count)
    for l1, l2_table in enumerate(parent.block_table):
        if l2_table is None:
            break  # BUG: a NULL slot does not end the table
        child.block_table[l1] = list(l2_table)
        for block in l2_table:
            if block != base.UNMAPPED:
                engine.ref_count[block] += 1
    child.node.add_tail(engine.active_seqs)
    return child
