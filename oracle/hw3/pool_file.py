"""PoolFile: the pools a Python submission is given, in a memory file the grader owns and reads itself.

The grader creates the memory file (a memfd), writes each pool into a window of it (guard + pool + guard,
page-aligned), and passes the file to the submission's child process, which maps the window and hands its
middle to llm_init as a writable buffer (pyserve.py). What the grader then checks of the pool, it reads from
the file here, in its own process: what the child says about the pool is never asked for, so a submission
cannot show the grader a clean copy of a pool it wrote into. (The C probes' pools are the same kind of
window: c/probe_adapter.py.)
"""

import hashlib
import mmap
import os

CHUNK = 1 << 20
POOL_BYTES_SHOWN = 1 << 20  # a probe gets a pool's bytes up to this size, else their digest


class PoolFile:
    """One memory file of pool windows. `window` places a new pool after the last one (two live engines keep
    two pools), `restart` places the next at the start again (a new adapter: the pools before are done with)."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("pagedcheck-python-pools")
        self._end = 0

    def restart(self) -> None:
        self._end = 0

    def window(self, size: int, guard: bytes, image: bytes | None = None, pattern: bytes | None = None) -> int:
        """A fresh window: `guard`, then `size` bytes of `image` or `pattern` repeated (None: zeros), then
        `guard` again; its offset in the file."""
        offset, g = self._end, len(guard)
        os.ftruncate(self.fd, offset)  # drops the pages an earlier window left at this place
        os.ftruncate(self.fd, offset + size + 2 * g)
        os.pwrite(self.fd, guard, offset)
        if image is not None:
            os.pwrite(self.fd, image[:size], offset + g)
        elif pattern:
            chunk = pattern * max(1, CHUNK // len(pattern))  # whole patterns, so each chunk continues it
            for start in range(0, size, len(chunk)):
                os.pwrite(self.fd, chunk[: size - start], offset + g + start)
        os.pwrite(self.fd, guard, offset + g + size)
        self._end = -(-(offset + size + 2 * g) // mmap.PAGESIZE) * mmap.PAGESIZE
        return offset

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes from `offset`, read from the file (bytes past its end, if any, are missing)."""
        parts, at = [], offset
        while at < offset + length:
            part = os.pread(self.fd, min(CHUNK, offset + length - at), at)
            if not part:
                break
            parts.append(part)
            at += len(part)
        return b"".join(parts)

    def sha256(self, offset: int, length: int) -> str:
        digest = hashlib.sha256()
        for start in range(offset, offset + length, CHUNK):
            digest.update(os.pread(self.fd, min(CHUNK, offset + length - start), start))
        return digest.hexdigest()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
