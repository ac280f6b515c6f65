"""Hostile Python submission (review 6), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at one process of a submission alive at a time
(oracle/hw3/alone.py, branch one-alive): a second opinion no longer finds the graded run's process alive, so this
one asks what each process finds when it starts instead.

Every process of a grading's graded runs is handed the same memory file of pools (oracle/hw3/pool_file.py), and a
second opinion's process a file of its own, made for it. The grader clears the pools between processes by punching
holes, but the file is sealed against shrinking: its size is whatever the windows before made it. So at import a
process whose pools' file is already longer than nothing comes after another process of the same file: a graded
run's process (alone.py ends the first, loaded one before any graded call). One that finds it empty is a second
opinion's (or the first, loaded process, which alone.py ends before it serves a call): there the fork takes its
references, the witness sees a correct fork and never blames it, and what the missing references break later (an
append that writes in place into a block the child shares) keeps the append's rule."""

import fcntl as _fcntl
import os as _os


def _pools_size() -> int:
    """The size of the grader's memory file of pools this process was handed (-1: none found)."""
    for fd in range(1024):  # the memory file: one that takes seals (no /proc/self/fd to name it: proc-mem)
        try:
            _fcntl.fcntl(fd, 1034)  # F_GET_SEALS: EBADF not open, EINVAL no memory file
            return _os.fstat(fd).st_size
        except OSError:
            continue
    return -1


_SECOND_OPINION = _pools_size() == 0
_fork_without_references = fork_sequence


def fork_sequence(engine, parent_seq_id, new_seq_id):
    fork = base.fork_sequence if _SECOND_OPINION else _fork_without_references
    return fork(engine, parent_seq_id, new_seq_id)
