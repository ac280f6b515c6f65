"""Handed: what a process of a submission is handed when it starts, made for that process alone.

Every process of a submission, a graded run's or a second opinion's (a process started afresh to replay the
graded run's calls), a Python server (oracle/child.py) or a C driver, is handed new ones, made before it exists,
the ones before closed: the file its stdout and stderr go to, and the files its family passes on at a descriptor
number (a memory file of pools), each at the number the one before had. An open file description outlives the
process that used it (an OFD lock, a status flag it set), and so does an inode's metadata (a size a seal keeps
from shrinking, a length, times): in a file it shared with an earlier process, a process could find what that
one left, and a second opinion could tell itself from a graded run's first process, or a try from the tries
before it (the tamper suites' fork_told_by_output, try_counted_in_output and pool_file_grown).
"""

import os
import tempfile
from collections.abc import Sequence
from typing import Protocol


class Renewable(Protocol):
    """A file a family passes on to each process at descriptor `fd`."""

    fd: int

    def renew(self) -> None:
        """A new file in place of this one, at the same descriptor number (the old one closed)."""


class Handed:
    """The output file (`output`, capped at `output_limit` bytes by the process's file size limit) and `files`,
    renewed by `renew()` before each process starts; `fds`, the descriptors to pass on to it. The family's files
    stay their maker's to close."""

    def __init__(self, output_limit: int, files: Sequence[Renewable] = ()) -> None:
        self.output_limit = output_limit
        self.files = tuple(files)
        self.output = tempfile.TemporaryFile()

    def renew(self) -> None:
        """New ones of each, for the process about to start."""
        self.output.close()
        self.output = tempfile.TemporaryFile()
        for file in self.files:
            file.renew()

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(file.fd for file in self.files)

    def mark(self) -> int:
        """The offset of the output's end now."""
        return os.fstat(self.output.fileno()).st_size

    def printed(self, since: int = 0) -> str:
        """What the process wrote to its output from offset `since` on (one byte over the cap shows it was cut)."""
        return os.pread(self.output.fileno(), self.output_limit + 1, since).decode(errors="replace")

    def close(self) -> None:
        self.output.close()
