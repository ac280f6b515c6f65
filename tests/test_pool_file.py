"""PoolFile (oracle/hw3/pool_file.py): the memory file of the pools, what the grader writes into its windows and
reads back, and what a process holding the descriptor the grader passes on (the submission's) can and cannot do
to it. That process is a real one here: a Python interpreter given the descriptor, as the driver and the Python
server are given it in grading."""

import fcntl
import mmap
import os
import subprocess
import sys

import pytest

from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.pool_file import SEALS, PoolFile, PoolUnreadable

GUARD = b"\xa5" * 64


@pytest.fixture
def pools():
    made = PoolFile()
    yield made
    made.close()


def holder(pools: PoolFile, code: str) -> list[str]:
    """`code` run in a process of its own that holds the pools' descriptor as `fd` (as the submission's does); the
    lines it printed."""
    ran = subprocess.run([sys.executable, "-I", "-c", f"import fcntl, mmap, os, sys\nfd = {pools.fd}\n{code}"],
                         pass_fds=(pools.fd,), capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.split()


def refused(call: str) -> str:
    """Python lines printing `call`'s errno name, or "ran"."""
    return (f"try:\n    {call}\n    print('ran')\nexcept OSError as e:\n"
            f"    print(__import__('errno').errorcode[e.errno])")


def test_a_window_holds_guard_contents_guard_at_a_page_aligned_offset(pools: PoolFile) -> None:
    first = pools.window(100, GUARD, image=bytes(range(100)))
    second = pools.window(10, GUARD, pattern=b"abc")
    third = pools.window(5, GUARD)
    assert first == 0 and second % mmap.PAGESIZE == 0 and second >= 100 + 128 and third > second
    assert pools.read(first, 228) == GUARD + bytes(range(100)) + GUARD
    assert pools.read(second, 138) == GUARD + b"abcabcabca" + GUARD
    assert pools.read(third + 64, 5) == bytes(5)


def test_a_large_pattern_continues_across_chunks(pools: PoolFile) -> None:
    size = (1 << 20) * 2 + 7  # past two of the writes' 1 MiB chunks, which a 3-byte pattern does not divide
    offset = pools.window(size, GUARD, pattern=b"xyz")
    assert pools.read(offset + 64, size) == (b"xyz" * size)[:size]
    assert pools.sha256(offset + 64, size) == __import__("hashlib").sha256((b"xyz" * size)[:size]).hexdigest()


def test_the_file_is_sealed_against_shrinking_and_further_seals_before_it_is_passed_on(pools: PoolFile) -> None:
    assert fcntl.fcntl(pools.fd, fcntl.F_GET_SEALS) & SEALS == SEALS
    assert SEALS & fcntl.F_SEAL_SHRINK and SEALS & fcntl.F_SEAL_SEAL


def test_a_holder_cannot_truncate_the_file_and_the_grader_reads_the_window_whole(pools: PoolFile) -> None:
    offset = pools.window(4096, GUARD, pattern=b"\x01\x02\x03\x04")
    said = holder(pools, "\n".join([refused("os.ftruncate(fd, 0)"), refused(f"os.ftruncate(fd, {offset + 100})")]))
    assert said == ["EPERM", "EPERM"]
    assert pools.read(offset, 4096 + 128) == GUARD + b"\x01\x02\x03\x04" * 1024 + GUARD


def test_a_holder_cannot_seal_the_file_against_the_grader_s_writes(pools: PoolFile) -> None:
    pools.window(100, GUARD)
    seals = (fcntl.F_SEAL_WRITE, 0x10, fcntl.F_SEAL_GROW)  # 0x10: F_SEAL_FUTURE_WRITE (Linux 5.1)
    said = holder(pools, "\n".join(refused(f"fcntl.fcntl(fd, fcntl.F_ADD_SEALS, {seal})") for seal in seals))
    assert said == ["EPERM", "EPERM", "EPERM"]
    assert pools.window(10, GUARD, pattern=b"z") > 0  # the grader still writes a new window


def test_a_hole_a_holder_punches_in_a_window_reads_as_zeros_in_the_pool(pools: PoolFile) -> None:
    offset = pools.window(8192, GUARD, pattern=b"\xee")
    said = holder(pools, f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
print(libc.fallocate(fd, 3, {offset + 64 + 1000}, 3000), os.fstat(fd).st_size)""")
    assert said == ["0", str(offset + 8192 + 128)]  # punched, and the file no shorter
    assert pools.read(offset + 64, 8192) == b"\xee" * 1000 + bytes(3000) + b"\xee" * 4192


def test_flags_a_holder_sets_on_its_descriptor_do_not_move_the_grader_s_writes(pools: PoolFile) -> None:
    pools.window(100, GUARD, pattern=b"a")
    assert holder(pools, "fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND | os.O_NONBLOCK)\n"
                         "print(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND != 0)") == ["True"]
    offset = pools.window(100, GUARD, pattern=b"b")  # with O_APPEND on a shared description, pwrite appends
    assert pools.read(offset, 228) == GUARD + b"b" * 100 + GUARD


def test_a_holder_may_grow_the_file_and_the_grader_s_next_window_is_its_own_bytes(pools: PoolFile) -> None:
    first = pools.window(100, GUARD, pattern=b"a")
    holder(pools, f"os.ftruncate(fd, {first + 3 * mmap.PAGESIZE})\n"
                  f"os.pwrite(fd, b'\\x77' * {2 * mmap.PAGESIZE}, {first + mmap.PAGESIZE})")
    second = pools.window(50, GUARD)  # zeros: placed where the holder wrote, inside the file it grew
    assert first + mmap.PAGESIZE <= second < first + 3 * mmap.PAGESIZE
    assert pools.read(second, 178) == GUARD + bytes(50) + GUARD
    assert pools.read(first, 228) == GUARD + b"a" * 100 + GUARD


def test_a_restart_frees_the_windows_and_the_next_is_fresh_whatever_was_written_there(pools: PoolFile) -> None:
    offset = pools.window(5000, GUARD, pattern=b"q")
    holder(pools, f"os.pwrite(fd, b'w' * 100, {offset + 6000})")
    assert os.fstat(pools.fd).st_blocks > 0
    pools.restart()
    assert os.fstat(pools.fd).st_blocks == 0  # the earlier windows' pages given back, the file no shorter
    again = pools.window(8000, GUARD)
    assert again == 0 and pools.read(0, 8128) == GUARD + bytes(8000) + GUARD


def test_bytes_the_file_does_not_hold_are_the_submission_s_failure_naming_them(pools: PoolFile) -> None:
    offset = pools.window(100, GUARD)
    end = os.fstat(pools.fd).st_size
    with pytest.raises(PoolUnreadable) as read:
        pools.read(offset, end + 10)
    assert isinstance(read.value, ImplementationFailure)
    assert str(read.value) == (f"left a pool the grader cannot read ({end + 10} bytes at offset {offset} of its "
                               f"memory file, which ends at byte {end})")
    with pytest.raises(PoolUnreadable):
        pools.sha256(end - 5, 10)


def test_the_grader_s_reads_write_no_access_time_a_holder_could_read(pools: PoolFile) -> None:
    """A graded run reads its pool after every call; a replay may read less: the access time of the file the
    submission's process holds must not say which (review 8's fork_unwatched told a witness's replay so)."""
    import time

    offset = pools.window(4096, b"G" * 64, pattern=b"x")
    before = os.fstat(pools.fd).st_atime_ns
    time.sleep(0.02)
    assert pools.read(offset, 4096 + 128)[:64] == b"G" * 64
    pools.sha256(offset, 4096)
    assert os.fstat(pools.fd).st_atime_ns == before


def test_close_closes_both_descriptors(pools: PoolFile) -> None:
    fd, own = pools.fd, pools._own
    pools.close()
    for closed in (fd, own):
        with pytest.raises(OSError):
            os.fstat(closed)
    pools.close()  # a second close is nothing
