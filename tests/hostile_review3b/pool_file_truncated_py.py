"""Hostile Python submission (review3b), on top of tests/broken/free_count_not_incremented.patch: the pools are
windows on the grader's memory file (oracle/hw3/pool_file.py), which the submission's process holds open; every
create_sequence truncates every memory file it finds in /proc/self/fd to nothing, so the window the grader reads
back after the call is gone."""

import os as _os


def _truncate_memory_files():
    for name in _os.listdir("/proc/self/fd"):
        try:
            if "memfd:" in _os.readlink(f"/proc/self/fd/{name}"):
                _os.ftruncate(int(name), 0)
        except OSError:
            pass


def _create_sequence(engine, seq_id, initial_kv_len):
    _truncate_memory_files()
    return base.create_sequence(engine, seq_id, initial_kv_len)  # noqa: F821 (python_module's `base`)


create_sequence = _create_sequence
