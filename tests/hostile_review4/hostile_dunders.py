"""Hostile Python submission (review 4), on top of tests/broken/free_count_not_incremented.patch: every Sequence that
create_sequence and fork_sequence return is wrapped in an object whose comparison, hash, truth, length, text and
attribute look-ups spin for 30 s of CPU and then claim to be whatever is asked (equal to anything, true, hash 0),
and append_kv's 0 and -1 come back as an int subclass that says it equals everything. Whoever compares, hashes,
prints or tests a returned object (the server, the grader) is stalled or lied to."""

import time as _time


def _spin():
    end = _time.process_time() + 30
    while _time.process_time() < end:
        pass


class _Trap:
    def __init__(self, seq):
        object.__setattr__(self, "_seq", seq)

    def __eq__(self, other):
        _spin()
        return True

    def __hash__(self):
        _spin()
        return 0

    def __bool__(self):
        _spin()
        return True

    def __len__(self):
        _spin()
        return 0

    def __repr__(self):
        _spin()
        return "Sequence()"

    __str__ = __repr__

    def __getattr__(self, name):
        _spin()
        return getattr(object.__getattribute__(self, "_seq"), name)


class _AnyInt(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


_create, _fork, _append = create_sequence, fork_sequence, append_kv


def create_sequence(engine, seq_id, initial_kv_len):
    seq = _create(engine, seq_id, initial_kv_len)
    return None if seq is None else _Trap(seq)


def fork_sequence(engine, parent_seq_id, new_seq_id):
    seq = _fork(engine, parent_seq_id, new_seq_id)
    return None if seq is None else _Trap(seq)


def append_kv(engine, seq_id, kv_data):
    return _AnyInt(_append(engine, seq_id, kv_data))
