"""Hostile Python submission (issue 17, after pool_file_truncated_py), on top of
tests/broken/free_count_not_incremented.patch: every create_sequence does to each memory file it holds (the grader's
pools' memfd, found by its seals) all that the file's seals leave it, and tries what they refuse: it tries to seal
the file against writes and growth (F_ADD_SEALS), sets O_APPEND and O_NONBLOCK on its descriptor (a description
shared with the grader's would append the grader's next window at the file's end), tries to make the file immutable
or append-only (FS_IOC_SETFLAGS: the grader's writes would fail) and unreadable (fchmod 0), and punches a hole over
the whole file (the pools read as zeros)."""

import array as _array
import ctypes as _ctypes
import fcntl as _fcntl
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = (_ctypes.c_int, _ctypes.c_int, _ctypes.c_int64, _ctypes.c_int64)


def _work_memory_files():
    for fd in range(1024):  # a memory file takes seals (no /proc/self/fd to read its name from: proc-mem)
        try:
            _fcntl.fcntl(fd, 1034)  # F_GET_SEALS: EBADF not open, EINVAL no memory file
            for seal in (0x0008, 0x0010, 0x0004):  # F_SEAL_WRITE, F_SEAL_FUTURE_WRITE, F_SEAL_GROW
                try:
                    _fcntl.fcntl(fd, 1033, seal)  # F_ADD_SEALS
                except OSError:
                    pass
            _fcntl.fcntl(fd, _fcntl.F_SETFL, _fcntl.fcntl(fd, _fcntl.F_GETFL) | _os.O_APPEND | _os.O_NONBLOCK)
            try:  # FS_IOC_SETFLAGS, FS_IMMUTABLE_FL | FS_APPEND_FL: refused without CAP_LINUX_IMMUTABLE
                _fcntl.ioctl(fd, 0x40086602, _array.array("l", [0x10 | 0x20]), True)
            except OSError:
                pass
            try:
                _os.fchmod(fd, 0)
            except OSError:
                pass
            _libc.fallocate(fd, 3, 0, _os.fstat(fd).st_size)  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
        except OSError:
            pass


def _create_sequence(engine, seq_id, initial_kv_len):
    _work_memory_files()
    return base.create_sequence(engine, seq_id, initial_kv_len)  # noqa: F821 (python_module's `base`)


create_sequence = _create_sequence
