"""fork_sequence sharing the parent's blocks without taking a reference of them (tests/broken/fork_no_incref.patch's
bug, as an edit after the engine's fork: graded in its child process, this file needs nothing but ours), slowed down."""

from types import SimpleNamespace

from engine import llm_memory as base
from tests.slowed import slowed_calls


def fork_sequence(engine, parent_seq_id, new_seq_id):
    child = base.fork_sequence(engine, parent_seq_id, new_seq_id)
    for l2_table in filter(None, child.block_table if child is not None else ()):
        for block in l2_table:
            if block != base.UNMAPPED:
                engine.ref_count[block] -= 1  # BUG: the fork's reference undone
    return child


globals().update(slowed_calls(SimpleNamespace(append_kv=base.append_kv, **{
    name: getattr(base, name) for name in ("llm_init", "create_sequence", "free_sequence", "llm_destroy")},
    fork_sequence=fork_sequence)))
