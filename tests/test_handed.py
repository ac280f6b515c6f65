"""Handed (oracle/handed.py): each process started after `renew()` gets an output file and pools' file of its own,
the pools' file at the number the one before had, and finds nothing an earlier process left in either. The
processes are real ones (a Python interpreter handed the files as a submission's process is); the pools' file is
hw3's PoolFile, the family file the grader hands today."""

import os
import subprocess
import sys

import pytest

from oracle.handed import Handed
from oracle.hw3.pool_file import PoolFile

# what an earlier process leaves: a status flag on the output's description, a grown pools' file (the seal keeps
# it from shrinking), and a line printed; then what a process finds at its start
LEAVE = ("import fcntl, os, sys\n"
         "fd = int(sys.argv[1])\n"
         "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
         "os.ftruncate(fd, 1 << 16)\n"
         "print('earlier')\n")
FIND = ("import fcntl, os, sys\n"
        "fd = int(sys.argv[1])\n"
        "print(os.fstat(fd).st_size, fcntl.fcntl(1, fcntl.F_GETFL) & os.O_NONBLOCK != 0)\n")


@pytest.fixture
def pools():
    made = PoolFile()
    yield made
    made.close()


def started(handed: Handed, code: str) -> None:
    """`code` run in a process started as a server starts one: after `renew()`, handed its files."""
    handed.renew()
    (fd,) = handed.fds
    subprocess.run([sys.executable, "-I", "-c", code, str(fd)], pass_fds=handed.fds, stdout=handed.output,
                   stderr=handed.output, timeout=60, check=True)


def test_a_process_finds_nothing_an_earlier_one_left_in_the_files_it_is_handed(pools: PoolFile) -> None:
    handed = Handed(1 << 20, [pools])
    try:
        started(handed, LEAVE)
        number = pools.fd
        assert handed.printed() == "earlier\n" and os.fstat(pools.fd).st_size == 1 << 16
        started(handed, FIND)
        # an empty pools' file, an output file holding nothing of the earlier one's, its description never used
        assert handed.printed() == "0 False\n"
        assert handed.fds == (number,)  # the same number as the process before
    finally:
        handed.close()


def test_printed_reads_from_a_mark_and_shows_the_cap_by_one_byte_over(pools: PoolFile) -> None:
    handed = Handed(10, [pools])
    try:
        handed.renew()
        handed.output.write(b"0123456789abcdef")
        handed.output.flush()
        assert handed.printed() == "0123456789a"  # one byte over the cap: the reader sees it was cut
        assert handed.printed(12) == "cdef" and handed.mark() == 16
    finally:
        handed.close()
