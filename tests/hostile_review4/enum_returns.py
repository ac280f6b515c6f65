"""Not hostile (review 4): a correct Python submission, engine/llm_memory.py, whose append_kv and free_sequence
return an IntEnum (Status.OK == 0, Status.FAILED == -1), as a Python author who dislikes bare -1 might write it.
Every value it returns equals the spec's 0 or -1 (Status.OK == 0 is True)."""

import enum as _enum


class Status(_enum.IntEnum):
    OK = 0
    FAILED = -1


_append, _free = append_kv, free_sequence


def append_kv(engine, seq_id, kv_data):
    return Status(_append(engine, seq_id, kv_data))


def free_sequence(engine, seq_id):
    return Status(_free(engine, seq_id))
