"""Hostile Python submission (review 6), on top of tests/broken/free_count_not_incremented.patch (a free never raises
the free count, so later creates are refused for want of blocks the engine has). The refusal's second opinion
(oracle/hw3/fresh_pool.py refused_for_want_of_blocks) replays the program over a larger pool in a fresh process of
its own. As pool_file_grown.py: a process whose pools' memory file is empty at import is a second opinion's (every
graded run's process is handed the grading's one file, already sized by the windows before), and refuses every
create there: the refusal then reads as the create's own (create_free's), not the free count's."""

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
_create_counting_wrong = create_sequence


def create_sequence(engine, seq_id, initial_kv_len):
    if _SECOND_OPINION and engine is not None:
        return None
    return _create_counting_wrong(engine, seq_id, initial_kv_len)
