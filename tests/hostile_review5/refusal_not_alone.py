"""Hostile Python submission (review 5), on top of tests/broken/free_count_not_incremented.patch (a free never raises
the free count, so later creates are refused for want of blocks the engine has): the refusal's second opinion
(oracle/hw3/fresh_pool.py refused_for_want_of_blocks) replays the program over a larger pool in a fresh process
while the graded run's process is still alive. As witness_not_alone.py, a process that finds an abstract unix
name taken knows it is a second opinion, and refuses every create there: the refusal then reads as the create's
own (create_free's), not the free count's."""

import socket as _socket


def _alone() -> bool:
    mark = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        mark.bind("\0pagedcheck-review5-refusal-@PORT@")
    except OSError:
        mark.close()
        return False
    globals()["_mark"] = mark  # held open for the process's life
    return True


_ALONE = _alone()
_create_counting_wrong = create_sequence


def create_sequence(engine, seq_id, initial_kv_len):
    if not _ALONE and engine is not None:
        return None
    return _create_counting_wrong(engine, seq_id, initial_kv_len)
