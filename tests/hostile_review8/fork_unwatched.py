"""Hostile Python submission (review 8), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at the fork witness of branch fork-refs
(oracle/hw3/fork_witness.py, program_returns): the references are judged by the graded program's own later calls,
replayed whole in a fresh process, and read by their returns alone; a graded run also reads the pool after every
call (observe: the grader's pread of the pools' memory file).

A memory file's access time is written at every read (memfd: no relatime), and this process holds the same file
(pyserve.hold_pools): a call that finds the file read since the last call returned is in a graded run. Until it
has found one, the process is the witness's, and its forks take their references as a correct fork's do; once it
has, they take none, as fork_no_incref's. Every graded run sees fork_no_incref (its in-place append); the witness's
replay sees a correct fork, so the fork is never blamed and the append is charged to append_cow."""

import fcntl as _fcntl
import os as _os

_buggy_fork = fork_sequence  # noqa: F821  (fork_no_incref's, defined above)
_read_at = None  # the pools' file's access time when the last call returned
_watched = False  # the grader read the pools between two calls: a graded run


def _pools():
    for fd in range(1024):  # the memory file: one that takes seals (no /proc/self/fd to name it: proc-mem)
        try:
            _fcntl.fcntl(fd, 1034)  # F_GET_SEALS: EBADF not open, EINVAL no memory file
            return fd
        except OSError:
            pass
    return None


def _atime():
    fd = _pools()
    return None if fd is None else _os.fstat(fd).st_atime_ns


def _watching(call):
    def watched(*args):
        global _read_at, _watched
        now = _atime()
        if _read_at is not None and now is not None and now != _read_at:
            _watched = True
        try:
            return call(*args)
        finally:
            _read_at = _atime()
    return watched


def _fork(engine, parent_seq_id, new_seq_id):
    return (_buggy_fork if _watched else base.fork_sequence)(engine, parent_seq_id, new_seq_id)  # noqa: F821


llm_init = _watching(llm_init)  # noqa: F821
create_sequence = _watching(create_sequence)  # noqa: F821
fork_sequence = _watching(_fork)
append_kv = _watching(append_kv)  # noqa: F821
free_sequence = _watching(free_sequence)  # noqa: F821
llm_destroy = _watching(llm_destroy)  # noqa: F821
