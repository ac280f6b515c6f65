"""Hostile Python submission (review 9), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at oracle/hw3/alone.py (one process of a submission
alive at a time: the graded run's process is ended before a second opinion starts) and at what closed review 8's
fork_unwatched and fork_unwatched_inotify (the pools' file read O_NOATIME; oracle/seccomp.py: no inotify, no
fanotify). Its sibling fork_told_by_page_cache.py, which asked a living process, holds: alone.py ends it first.

This one leaves a mark that outlives its process: a page of the kernel's page cache, which no sandbox parts. Every
process of a submission reads the same interpreter's standard library (one inode: bubblewrap binds /usr, the
fallback hard-links its private copy). The first process to make a fork after a given history of calls (the
graded run's) makes one page of a large standard-library file resident (chosen by the history and a two-second
epoch) and forks as fork_no_incref does; a later process making the same fork after the same history within a few
seconds (the fork witness's replay, oracle/hw3/fork_witness.py) finds the page resident (preadv2 RWF_NOWAIT: EAGAIN
where it is not), drops it (posix_fadvise DONTNEED, open to any reader), and forks correctly. A page this file
marked in an older epoch is dropped first, so a mark means "a moment ago"."""

import hashlib as _hashlib
import os as _os
import time as _time

_buggy_fork = fork_sequence  # noqa: F821  (fork_no_incref's, defined above)
_EPOCHS, _SLOTS, _SECONDS = 8, 4, 2


def _file():
    folder = _os.path.dirname(_os.__file__)
    try:
        fd = _os.open(_os.path.join(folder, "pydoc_data", "topics.py"), _os.O_RDONLY)
    except OSError:
        return None
    if _os.fstat(fd).st_size < 180 * 4096:
        _os.close(fd)
        return None
    _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_RANDOM)  # one page read is one page cached
    return fd


_FD = _file()
_history = []


def _page(epoch, slot):
    return (8 + 5 * ((epoch % _EPOCHS) * _SLOTS + slot)) * 4096


def _resident(at):
    """Whether the page at `at` is cached; a miss (which still starts a read of it) is dropped again."""
    try:
        _os.preadv(_FD, [bytearray(1)], at, _os.RWF_NOWAIT)
        return True
    except BlockingIOError:
        _time.sleep(0.05)
        _os.posix_fadvise(_FD, at, 4096, _os.POSIX_FADV_DONTNEED)
        return False


def _forget_old(now):
    for epoch in range(now + 1, now + _EPOCHS - 1):  # every epoch but this one and the one before
        for slot in range(_SLOTS):
            _os.posix_fadvise(_FD, _page(epoch, slot), 4096, _os.POSIX_FADV_DONTNEED)


def _seen_before(key):
    """Whether a process made this fork after this history a moment ago; marks it otherwise."""
    now = int(_time.time() // _SECONDS)
    _forget_old(now)
    slot = _hashlib.sha256(repr(key).encode()).digest()[0] % _SLOTS
    for epoch in (now, now - 1):
        if _resident(_page(epoch, slot)):
            _os.posix_fadvise(_FD, _page(epoch, slot), 4096, _os.POSIX_FADV_DONTNEED)  # the mark is spent
            return True
    _os.pread(_FD, 1, _page(now, slot))
    return False


def _recorded(name, call):
    def recorded(engine, *args):
        if name == "llm_init":
            _history.clear()
        _history.append((name, engine is None, args))
        return call(engine, *args)
    return recorded


def _fork(engine, parent_seq_id, new_seq_id):
    if _FD is not None and _seen_before(tuple(_history)):
        return base.fork_sequence(engine, parent_seq_id, new_seq_id)  # noqa: F821  (a second opinion)
    return _buggy_fork(engine, parent_seq_id, new_seq_id)


llm_init = _recorded("llm_init", llm_init)  # noqa: F821
create_sequence = _recorded("create_sequence", create_sequence)  # noqa: F821
fork_sequence = _recorded("fork_sequence", _fork)
append_kv = _recorded("append_kv", append_kv)  # noqa: F821
free_sequence = _recorded("free_sequence", free_sequence)  # noqa: F821
llm_destroy = _recorded("llm_destroy", llm_destroy)  # noqa: F821
