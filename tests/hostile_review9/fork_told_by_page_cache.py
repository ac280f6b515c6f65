"""Hostile Python submission (review 9), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at what closed review 8's fork_unwatched and
fork_unwatched_inotify: the pools' file read O_NOATIME (oracle/hw3/pool_file.py) and no run may watch a file
(oracle/seccomp.py: inotify, fanotify). This one reads nothing of the grader's: it tells the fork witness's fresh
process (oracle/hw3/fork_witness.py, a second opinion started while the graded run's server still lives) from the
graded run's by the kernel's page cache, which no sandbox parts: every process of a submission reads the same
interpreter's standard library (one inode: bubblewrap binds /usr, the fallback hard-links its private copy).

At load, a process drops one page of a large standard-library file from the cache (posix_fadvise DONTNEED, which
any reader may ask), waits, and asks whether the page is back (preadv2 RWF_NOWAIT: EAGAIN where it is not). If it
is, a living process of the same submission keeps it there: this one is a second opinion, and its forks take their
references as a correct fork's do. If not, it is the first: it keeps the page there itself (a thread reading it
every few milliseconds) and its forks take none, as fork_no_incref's. Every graded run sees fork_no_incref (its
in-place append); the witness sees a correct fork, so the fork is never blamed and the append is charged to
append_cow."""

import os as _os
import threading as _threading
import time as _time

_buggy_fork = fork_sequence  # noqa: F821  (fork_no_incref's, defined above)


def _page():
    folder = _os.path.dirname(_os.__file__)
    for name, page in (("pydoc_data/topics.py", 37), ("_pydecimal.py", 23), ("typing.py", 19), ("os.py", 5)):
        try:
            fd = _os.open(_os.path.join(folder, name), _os.O_RDONLY)
        except OSError:
            continue
        if _os.fstat(fd).st_size > (page + 1) * 4096:
            _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_RANDOM)  # one page read is one page cached
            return fd, page * 4096
        _os.close(fd)
    return None, 0


_FD, _AT = _page()


def _cached():
    try:
        _os.preadv(_FD, [bytearray(1)], _AT, _os.RWF_NOWAIT)
        return True
    except BlockingIOError:
        return False


def _keep():
    while True:
        _os.pread(_FD, 1, _AT)
        _time.sleep(0.002)


def _first():
    if _FD is None:
        return True
    for _ in range(3):
        _time.sleep(0.05)  # a read this one asked before (RWF_NOWAIT still starts one) has ended: its page can go
        _os.posix_fadvise(_FD, 0, 0, _os.POSIX_FADV_DONTNEED)
        _time.sleep(0.05)
        if not _cached():
            break
    else:
        return False  # a living sibling keeps it: a second opinion
    _threading.Thread(target=_keep, daemon=True).start()
    return True


_GRADED = _first()


def fork_sequence(engine, parent_seq_id, new_seq_id):
    return (_buggy_fork if _GRADED else base.fork_sequence)(engine, parent_seq_id, new_seq_id)  # noqa: F821
