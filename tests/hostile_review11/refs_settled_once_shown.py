"""Hostile Python submission (review 11), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at the fork witness that reads the graded run's own later
calls (oracle/hw3/fork_witness.py, graded_calls.py: the rest of the program made ahead in the graded process).

No channel and no second process: the engine knows itself when its bug has shown. It keeps, beside its ref counts,
the references its forks did not take (owed). The moment an append writes in place into a block a correct fork would
have left shared (ref count 1, a reference owed), the append's difference is made (append_cow's rule by the pool);
right after it the engine pays every owed reference, and from then on its forks take theirs. The later calls the
witness reads (a sharer's free, then a create that must be refused) are those of an engine whose references hold, so
the witness shows nothing and the in-place write stays append_cow's. Before the first such write it is
fork_no_incref exactly."""

_bug_fork = fork_sequence  # noqa: F821  (the broken fork above)
_owed: dict[int, dict[int, int]] = {}  # id(engine): block -> references its forks did not take
_settled: set[int] = set()  # engines whose owed references were paid


def _blocks(seq):
    return [b for table in seq.block_table if table is not None for b in table if b != UNMAPPED]  # noqa: F821


def fork_sequence(engine, parent_seq_id, new_seq_id):
    child = _bug_fork(engine, parent_seq_id, new_seq_id)
    if child is not None:
        real = _engine(engine)  # noqa: F821
        for block in _blocks(child):
            if id(real) in _settled:
                real.ref_count[block] += 1  # a correct fork from now on
            else:
                owed = _owed.setdefault(id(real), {})
                owed[block] = owed.get(block, 0) + 1
    return child


def append_kv(engine, seq_id, kv_data):
    target = None
    if engine is not None:
        real = _engine(engine)  # noqa: F821
        seq = real.find(seq_id)
        if seq is not None and id(real) not in _settled:
            l1, l2 = divmod(seq.kv_count // KV_PER_BLOCK, L2_PT_SIZE)  # noqa: F821
            table = seq.block_table[l1] if l1 < len(seq.block_table) else None
            block = table[l2] if table is not None else UNMAPPED  # noqa: F821
            if block != UNMAPPED and real.ref_count[block] == 1 and _owed.get(id(real), {}).get(block):  # noqa: F821
                target = real
    returned = base.append_kv(engine, seq_id, kv_data)  # noqa: F821
    if target is not None and returned == 0:  # it wrote in place into a block a correct fork leaves shared
        for block, count in _owed.pop(id(target), {}).items():
            if target.ref_count[block] > 0:
                target.ref_count[block] += count
        _settled.add(id(target))
    return returned


def llm_init(pool_addr, pool_size):
    engine = base.llm_init(pool_addr, pool_size)  # noqa: F821
    if engine is not None:
        _owed.pop(id(_engine(engine)), None)  # noqa: F821
        _settled.discard(id(_engine(engine)))  # noqa: F821
    return engine
