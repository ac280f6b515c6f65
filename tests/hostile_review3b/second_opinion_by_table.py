"""Hostile Python submission, on top of tests/broken/free_count_not_incremented.patch, against the second opinion
since its pool is derived from the program's own (oracle/hw3/fresh_pool.py witness_pool): the engine holds the
table of pool sizes the rubric's fixed programs use (oracle/hw3/programs, public), and on any other pool refuses
every create after a free, so the refusal the bug made there looks like the call's own, not the free count's."""

_GRADED_POOLS = {0, 63, 64, 100, 128, 192, 256, 383, 384, 385, 512, 525, 640, 703, 768, 1024, 1280, 1536, 2560,
                 5120, 16448, 19200, 19201, 19204}
_pools = {}  # id() of an engine: the pool size it was made over
_freed = set()  # ids of the engines that freed a sequence
_base_llm_init = llm_init  # noqa: F821 (the bug's llm_init)


def _llm_init(pool_addr, pool_size):
    engine = _base_llm_init(pool_addr, pool_size)
    if engine is not None:
        _pools[id(engine)] = pool_size
    return engine


def _free_sequence(engine, seq_id):
    status = base.free_sequence(engine, seq_id)  # noqa: F821 (python_module's `base`)
    if status == 0 and engine is not None:
        _freed.add(id(engine))
    return status


def _create_sequence(engine, seq_id, initial_kv_len):
    if engine is not None and id(engine) in _freed and _pools.get(id(engine)) not in _GRADED_POOLS:
        return None
    return base.create_sequence(engine, seq_id, initial_kv_len)  # noqa: F821


llm_init = _llm_init
free_sequence = _free_sequence
create_sequence = _create_sequence
