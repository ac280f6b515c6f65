"""Hostile Python submission (review 7), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at the fork witness's second opinion on the references
(oracle/hw3/fork_witness.py, _references_missed): where the graded run's own append wrote in place into a block a
fork's parent and child share, the witness replays the program up to the fork in a fresh process and at once frees
the fork's parent, fills the pool and asks for one more block; the references are shown missed when that last create
is granted (and the control, without the fork, agrees).

A Python engine's references are its own word. So this fork takes its references as a correct fork does, and
settles them at the next call: when that call frees the fork's parent (the witness's very move), they stay, and the
free leaves the child every block it shares, as a correct fork's would; any other call drops them again, and from
there on the engine is fork_no_incref's. Review 6's fork_settled_late kept them for the in-place witness's append,
which is gone (the in-place evidence is now the graded run's own append); this one keeps them for the references'
witness that remains. No directed program of the fork or append_cow items frees a fork's parent right after its
fork, so every graded run sees fork_no_incref; only the witness sees a correct fork, and never blames it."""

_pending = None  # (engine, parent id, the blocks the child shares) from a fork to the next call


def _settle(api, args=()):
    """The references the last fork took dropped, unless this call frees that fork's parent."""
    global _pending
    if _pending is None:
        return
    engine, parent, blocks = _pending
    _pending = None
    if api == "free_sequence" and args[0] == parent:
        return  # the witness: the fork keeps its references, and the free leaves the child its blocks
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
        _pending = (_engine(engine), parent_seq_id, shared)
    return child


def append_kv(engine, seq_id, kv_data):
    _settle("append_kv")
    return base.append_kv(engine, seq_id, kv_data)


def free_sequence(engine, seq_id):
    _settle("free_sequence", (seq_id,))
    return base.free_sequence(engine, seq_id)


def llm_destroy(engine):
    _settle("llm_destroy")
    return base.llm_destroy(engine)
