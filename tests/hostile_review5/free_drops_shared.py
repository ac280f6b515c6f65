"""Hostile Python submission (review 5), appended to engine/llm_memory.py (a correct engine): free_sequence gives
back every block the freed sequence holds at once, however many sequences share it (its ref_count set to 0),
where it must drop one reference. Fork is correct: it takes a reference of every block it shares, and an append
to a shared block copies it (the pool's bytes show that).

A free bug (Task 2: Sequence Creation & Deletion), shown only after a fork: a later create is granted the blocks
the fork's child still holds. The fork witness (oracle/hw3/fork_witness.py) once replayed the fork, freed its parent
and filled the pool only: the one-block create it must be refused succeeded, its control without the fork agreed,
so the witness called the fork wrong and the difference went to Task 3 (fork), which a course may weigh less than
create_free. Held now: a fork is blamed only where an append of the graded run to a block the fork's parent and child
share wrote in place, and here such appends copy (the fork took its references): no append in place, no blame on
the fork."""


def free_sequence(engine, seq_id):
    if engine is None:
        return -1
    engine = _engine(engine)
    _int32("seq_id", seq_id)
    seq = engine.find(seq_id)
    if seq is None:
        return -1
    seq.node.unlink()
    for l2_table in seq.block_table:
        if l2_table is None:
            continue
        for block in l2_table:
            while block != UNMAPPED and engine.ref_count[block] > 0:  # BUG: every reference, not its own one
                engine.release_block(block)
    seq.block_table = [None] * L1_PT_SIZE
    return 0
