"""Hostile Python submission (review3b), on top of tests/broken/free_count_not_incremented.patch: the grader judges
the bug by a second opinion (oracle/hw3/fresh_pool.py refused_for_want_of_blocks): the program since its last
llm_init replayed in a fresh process over an empty pool of FRESH_BLOCKS (4096) blocks, where a refusal the bug
made goes away. The engine tells that run apart by its pool's size alone, and there refuses every create after
a free, so the refusal looks like the call's own and not the free count's."""

_SPOTTED_BLOCKS = 4096  # fresh_pool.FRESH_BLOCKS: no program of the rubric's own uses a pool of that size
_freed = set()  # ids of the engines (id()) that freed a sequence


def _free_sequence(engine, seq_id):
    status = base.free_sequence(engine, seq_id)  # noqa: F821 (python_module's `base`)
    if status == 0 and engine is not None:
        _freed.add(id(engine))
    return status


def _create_sequence(engine, seq_id, initial_kv_len):
    if engine is not None and engine.total_local_blocks == _SPOTTED_BLOCKS and id(engine) in _freed:
        return None
    return base.create_sequence(engine, seq_id, initial_kv_len)  # noqa: F821


free_sequence = _free_sequence
create_sequence = _create_sequence
