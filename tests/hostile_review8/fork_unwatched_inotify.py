"""Hostile Python submission (review 8), on top of tests/broken/fork_no_incref.patch, as fork_unwatched.py but told by
inotify instead of the access time: the served process watches the pools' memory file it holds
(inotify_add_watch on /proc/self/fd/N, IN_ACCESS), and the kernel reports each of the grader's preads of it, with
or without an access time written (O_NOATIME, noatime). A call that finds such an event since the last call
returned is in a graded run (the pool read after every call); the fork witness's replay (program_returns) never
reads it. The fork takes its references only there. So freezing the access time alone does not close attack 3:
the grader's reads must not be told apart (the witness observing as a graded run does, or reads no process sees)."""

import ctypes as _ctypes
import fcntl as _fcntl
import os as _os

_buggy_fork = fork_sequence  # noqa: F821  (fork_no_incref's, defined above)
_libc = _ctypes.CDLL(None, use_errno=True)
_watch = None  # the inotify descriptor watching the pools' file, once set up
_watched = False  # the grader read the pools between two calls: a graded run


def _pools():
    for fd in range(1024):  # the memory file: one that takes seals (no /proc/self/fd to name it: proc-mem)
        try:
            _fcntl.fcntl(fd, 1034)  # F_GET_SEALS: EBADF not open, EINVAL no memory file
            return fd
        except OSError:
            pass
    return None


def _events():
    """How many bytes of events are pending (IN_ACCESS of the pools' file), read away."""
    global _watch
    if _watch is None:
        fd = _pools()
        if fd is None:
            return 0
        _watch = _libc.inotify_init1(_os.O_NONBLOCK | _os.O_CLOEXEC)
        if _watch < 0 or _libc.inotify_add_watch(_watch, f"/proc/self/fd/{fd}".encode(), 0x1) < 0:
            return 0
    total = 0
    while True:
        try:
            got = _os.read(_watch, 4096)
        except OSError:
            return total
        if not got:
            return total
        total += len(got)


def _watching(call):
    def watched(*args):
        global _watched
        if _events():
            _watched = True
        try:
            return call(*args)
        finally:
            _events()  # what the call itself made
    return watched


def _fork(engine, parent_seq_id, new_seq_id):
    return (_buggy_fork if _watched else base.fork_sequence)(engine, parent_seq_id, new_seq_id)  # noqa: F821


llm_init = _watching(llm_init)  # noqa: F821
create_sequence = _watching(create_sequence)  # noqa: F821
fork_sequence = _watching(_fork)
append_kv = _watching(append_kv)  # noqa: F821
free_sequence = _watching(free_sequence)  # noqa: F821
llm_destroy = _watching(llm_destroy)  # noqa: F821
