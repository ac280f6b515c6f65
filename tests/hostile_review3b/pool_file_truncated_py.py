"""Hostile Python submission (review3b), on top of tests/broken/free_count_not_incremented.patch: the pools are
windows on the grader's memory file (oracle/hw3/pool_file.py), which the submission's process holds open; every
create_sequence truncates every memory file it holds to nothing, so the window the grader reads
back after the call is gone."""

import fcntl as _fcntl
import os as _os


def _truncate_memory_files():
    for fd in range(1024):  # a memory file takes seals (no /proc/self/fd to name it: proc-mem)
        try:
            _fcntl.fcntl(fd, 1034)  # F_GET_SEALS: EBADF not open, EINVAL no memory file
            _os.ftruncate(fd, 0)
        except OSError:
            pass


def _create_sequence(engine, seq_id, initial_kv_len):
    _truncate_memory_files()
    return base.create_sequence(engine, seq_id, initial_kv_len)  # noqa: F821 (python_module's `base`)


create_sequence = _create_sequence
