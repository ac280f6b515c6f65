"""PoolFile: the pools a submission is given, in a memory file the grader owns and reads itself.

The grader creates the memory file (a memfd), writes each pool into a window of it (guard + pool + guard,
page-aligned), and passes the file to the submission's process, which maps the window and hands its middle to
llm_init as a writable buffer (pyserve.py, c/driver.c's load_pool). What the grader then checks of the pool, it
reads from the file here, in its own process: what the submission's process says about the pool is never asked
for, so a submission cannot show the grader a clean copy of a pool it wrote into.

The submission's process holds the file too (it must map it), so the file is made so that nothing it does with
its descriptor can take a window from the grader:
- sealed before any process of the submission's exists: F_SEAL_SHRINK (no window ever gets shorter, so every
  byte the grader reads back is there) and F_SEAL_SEAL (no seal may be added: F_SEAL_WRITE, which would refuse
  the grader's own writes, cannot be). The file may still grow: the grader grows it for each new window, a
  submission only up to its own file size limit, and the grader reads nothing past its windows.
- the grader reads and writes through an open file description of its own (`self.fd` is the one passed on), so
  the flags a submission may set on the description it holds (O_APPEND, O_NONBLOCK) never reach the grader's
  reads and writes; its reads write no access time (O_NOATIME), so a run cannot tell by the file whether the
  grader read its pool (review 8's fork_unwatched).
Whatever bytes a submission's process puts in a window (its writes, through the mapping or the descriptor, or
a hole punched, which reads as zeros) are the pool's contents, judged as the pool. A window the grader still
cannot read in full is the failure of the submission's call that made it so (PoolUnreadable), never the
grader's.
"""

import ctypes
import fcntl
import hashlib
import mmap
import os
from collections.abc import Iterator

from oracle.hw3.observation import ImplementationFailure

CHUNK = 1 << 20
POOL_BYTES_SHOWN = 1 << 20  # a probe gets a pool's bytes up to this size, else their digest
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
_PUNCH_HOLE = 0x01 | 0x02  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE: the range reads as zeros, its pages freed
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)


def _pages(length: int) -> int:
    """`length` rounded up to whole pages."""
    return -(-length // mmap.PAGESIZE) * mmap.PAGESIZE


class PoolUnreadable(ImplementationFailure):
    """Bytes of a window the grader made came back short or not at all: the submission's doing (its process holds
    the file), a failure of the call after which the grader read them."""


def _sealed() -> tuple[int, int]:
    """A new memory file, sealed: the descriptor to pass on, and one of the grader's own (its own description)."""
    fd = os.memfd_create("pagedcheck-pools", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        # O_NOATIME: the grader's reads write no access time a run could read off the file it holds (it may not
        # watch it either: oracle/seccomp.py), so nothing tells a run whether the grader read its pool
        return fd, os.open(f"/proc/self/fd/{fd}", os.O_RDWR | os.O_CLOEXEC | os.O_NOATIME)
    except BaseException:
        os.close(fd)
        raise


class PoolFile:
    """One memory file of pool windows. `window` places a new pool after the last one (two live engines keep
    two pools), `restart` places the next at the start again (a new adapter: the pools before are done with).
    `fd` is the descriptor to pass to the submission's process."""

    def __init__(self) -> None:
        self.fd, self._own = _sealed()
        self._end = 0

    def renew(self) -> None:
        """A new, empty file in place of this one, at the same descriptor number: for a new process of the
        submission, which then finds nothing an earlier one left (a size the seal kept, a number of its own)."""
        fd, own = _sealed()
        try:  # each onto the old one's number (the old file's pages go with its last descriptor)
            os.dup2(fd, self.fd, inheritable=False)
            os.dup2(own, self._own, inheritable=False)
        finally:
            os.close(fd)
            os.close(own)
        self._end = 0

    def restart(self) -> None:
        self._drop(0, _pages(os.fstat(self._own).st_size))  # the earlier windows' pages, freed (a last one in part too)
        self._end = 0

    def window(self, size: int, guard: bytes, image: bytes | None = None, pattern: bytes | None = None) -> int:
        """A fresh window: `guard`, then `size` bytes of `image` or `pattern` repeated (None: zeros), then
        `guard` again; its offset in the file."""
        offset, g = self._end, len(guard)
        end = offset + size + 2 * g
        self._reach(end)
        self._drop(offset, end - offset)  # zeros, whatever an earlier window or the submission's process left here
        os.pwrite(self._own, guard, offset)
        if image is not None:
            os.pwrite(self._own, image[:size], offset + g)
        elif pattern:
            chunk = pattern * max(1, CHUNK // len(pattern))  # whole patterns, so each chunk continues it
            for start in range(0, size, len(chunk)):
                os.pwrite(self._own, chunk[: size - start], offset + g + start)
        os.pwrite(self._own, guard, offset + g + size)
        self._end = _pages(end)
        return offset

    def _reach(self, end: int) -> None:
        """The file at least `end` bytes long (it may only grow: a submission's process may have grown it)."""
        if os.fstat(self._own).st_size < end:
            try:
                os.ftruncate(self._own, end)
            except PermissionError:  # grown past `end` meanwhile: shortening it back is what the seal refuses
                if os.fstat(self._own).st_size < end:
                    raise

    def _drop(self, offset: int, length: int) -> None:
        """Bytes [offset, offset + length) zeros, their pages given back (a hole punched: the seals allow it)."""
        if length > 0 and _libc.fallocate(self._own, _PUNCH_HOLE, offset, length) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"cannot clear the pools' memory file: {os.strerror(error)}")

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes from `offset`, read from the file; PoolUnreadable when they cannot all be read."""
        return b"".join(self._chunks(offset, length))

    def sha256(self, offset: int, length: int) -> str:
        digest = hashlib.sha256()
        for part in self._chunks(offset, length):
            digest.update(part)
        return digest.hexdigest()

    def _chunks(self, offset: int, length: int) -> Iterator[bytes]:
        """The `length` bytes at `offset`, in reads of at most CHUNK bytes (PoolUnreadable: see _pread)."""
        at = offset
        while at < offset + length:
            part = self._pread(min(CHUNK, offset + length - at), at, offset, length)
            yield part
            at += len(part)

    def _pread(self, count: int, at: int, offset: int, length: int) -> bytes:
        """Up to `count` bytes at `at`, at least one, of the `length` bytes at `offset` the grader is reading."""
        try:
            part = os.pread(self._own, count, at)
        except OSError as error:
            raise PoolUnreadable(f"left a pool the grader cannot read ({length} bytes at offset {offset} of its "
                                 f"memory file: {error.strerror})") from None
        if not part:
            raise PoolUnreadable(f"left a pool the grader cannot read ({length} bytes at offset {offset} of its "
                                 f"memory file, which ends at byte {at})")
        return part

    def close(self) -> None:
        for fd in (self.fd, self._own):
            if fd >= 0:
                os.close(fd)
        self.fd = self._own = -1
