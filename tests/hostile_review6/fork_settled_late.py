"""Hostile Python submission (review 6), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at the fork witness's in-place test
(oracle/hw3/fork_witness.py, branch fork-inplace): it replays the program to the fork in a fresh process and at once
appends to the child, at the block it shares with its parent, the last record the program appended (or that record
^ 1); a fork without references lets that append write in place.

A Python engine's references are the submission's own word: nothing the grader reads shows them until a later call
acts on them. So this fork takes its references as a correct fork does, and settles them at the next call: when that
call is an append to the child of the program's last record (or it ^ 1), the witness's very move, the references
stay (the append copies the shared block, as a correct fork's would); any other call drops them again, and from
there on the engine is exactly fork_no_incref's. No directed program of the fork or append_cow items appends that
record to a child right after its fork, so every graded run sees fork_no_incref; only the witness sees a correct
fork, and never blames it."""

_pending = None  # (engine, child id, the blocks it shares) from a fork to the next call
_last = 0  # the last record an append was asked to write (the witness's record: 0 when none)


def _settle(api, args=()):
    """The references the last fork took dropped, unless this call is the in-place witness's append."""
    global _pending
    if _pending is None:
        return
    engine, child, blocks = _pending
    _pending = None
    if api == "append_kv" and args[0] == child and args[1] in (_last, _last ^ 1):
        return  # the witness: the fork keeps its references, and this append copies the shared block
    for block in blocks:
        engine.ref_count[block] -= 1  # as fork_no_incref leaves them


def llm_init(pool_addr, pool_size):
    _settle("llm_init")
    return base.llm_init(pool_addr, pool_size)


def create_sequence(engine, seq_id, initial_kv_len):
    _settle("create_sequence")
    return base.create_sequence(engine, seq_id, initial_kv_len)


def fork_sequence(engine, parent_seq_id, new_seq_id):
    global _pending
    _settle("fork_sequence")
    child = base.fork_sequence(engine, parent_seq_id, new_seq_id)  # a correct fork: it takes its references
    if child is not None:
        shared = [b for table in child.block_table if table is not None for b in table if b != UNMAPPED]
        _pending = (_engine(engine), new_seq_id, shared)
    return child


def append_kv(engine, seq_id, kv_data):
    global _last
    _settle("append_kv", (seq_id, kv_data))
    _last = kv_data
    return base.append_kv(engine, seq_id, kv_data)


def free_sequence(engine, seq_id):
    _settle("free_sequence")
    return base.free_sequence(engine, seq_id)


def llm_destroy(engine):
    _settle("llm_destroy")
    return base.llm_destroy(engine)
