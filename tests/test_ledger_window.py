"""The pool's window is told by the file it maps, never by the descriptor's number (oracle/native/ledger.py,
heap_notify.py's file_of; oracle/SANDBOX.md, "The pool's window").

The driver maps each pool from the grader's memory file by the descriptor number the grader gave, and the ledger
took a mapping of that number, at the pool's offset and length, for the pool's window (not a block). The
submission's code shares the driver's descriptor table. tests/submissions/hostile/fd_window/pool_swapped.patch
(the reference plus the attack) puts a file of its own at that number in its first llm_init and keeps the grader's
file at another: the next llm_init's pool was a window on the submission's file, which the grader never reads.
Measured before the fix (the driver's /proc/PID/maps: `rw-s 00002000 00:31 4 /tmp/#4 (deleted)` for the second
pool), with one append_kv that writes a byte of the guard zone before the pool and copies the pool, not its guards,
into the grader's file: the ledger counted no block for the mapping, and the grader's observation showed the guard
zone intact and the record where it belongs, while the engine's guard byte in the driver's memory was 00. A memory
error hidden, and every later verdict on that pool resting on a file the engine never used.

Now a mapping of the window's shape whose descriptor names another file is refused (EBADF): the driver maps no
pool but the grader's, and says why.
"""

import errno
from pathlib import Path
from typing import Iterator

import pytest

from oracle import isolation
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.pool import GUARD
from oracle.native.ledger import MAP_SHARED, MMAP, PAGE, PROT_READ, PROT_WRITE, Ledger
from oracle.sandbox import Sandbox
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched_copy

POOLS_FD, OTHER_FD, OFFSET, LENGTH = 5, 9, 3 * PAGE, 3 * PAGE
POOLS_FILE, OTHER_FILE = (1, 1735), (44, 4)  # (st_dev, st_ino): the grader's memory file, a file of the program's


def window(fd: int = POOLS_FD) -> tuple[int, ...]:
    """The driver's mapping of a pool (driver.c load_pool): MAP_SHARED, read-write, placed by the kernel."""
    return (0, LENGTH, PROT_READ | PROT_WRITE, MAP_SHARED, fd, OFFSET)


def expecting() -> Ledger:
    ledger = Ledger()
    ledger.expect_window(POOLS_FILE, OFFSET, LENGTH)
    ledger.call_started()
    return ledger


def test_the_window_is_the_grader_file_whatever_number_names_it() -> None:
    """A second descriptor of the grader's file (the program may open it again through /proc/self/fd) maps the same
    pages: the pool the grader reads, not a block."""
    ledger = expecting()
    assert ledger.answer(MMAP, window(OTHER_FD), {OTHER_FD: POOLS_FILE}.get) == 0
    assert ledger.live_blocks == 0 and ledger.window is None


@pytest.mark.parametrize("names", [{POOLS_FD: OTHER_FILE}, {}, None], ids=["another-file", "unreadable", "unasked"])
def test_a_window_on_any_other_file_is_refused_and_the_pool_is_never_mapped(names: dict | None) -> None:
    """The pool's number naming a file of the program's, or a descriptor the grader could not read (closed, the
    process gone), or no way to ask: EBADF, nothing counted, and the window gone with its one chance (the same
    mapping of the grader's file after it is a block)."""
    ledger = expecting()
    assert ledger.answer(MMAP, window(), None if names is None else names.get) == errno.EBADF
    assert (ledger.grants, ledger.live_blocks, ledger.window) == (0, 0, None)
    assert ledger.answer(MMAP, window(), {POOLS_FD: POOLS_FILE}.get) == 0 and ledger.live_blocks == 1


@pytest.fixture(scope="module", params=["bubblewrap", "fallback"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """A sandbox of each isolation: the grader reads the driver's descriptor from outside under both."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "fallback":
            patch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
            patch.setattr(isolation, "_probed", {})
        with Sandbox() as sandbox:
            if request.param == "bubblewrap" and sandbox.isolation != "bubblewrap":
                pytest.skip(f"no bubblewrap here: {sandbox.problem}")
            yield sandbox


def _driver(source: Path, workdir: Path) -> Path:
    built = build(source, workdir)
    assert built.ok and built.driver is not None, built.message
    return built.driver


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("window")
    hostile = patched_copy(SUBMISSIONS / "hostile" / "fd_window" / "pool_swapped.patch", REFERENCE_C,
                           work / "pool_swapped" / "llm_memory.c")
    forks = patched_copy(SUBMISSIONS / "hostile" / "fork.patch", REFERENCE_C, work / "fork" / "llm_memory.c")
    return {"reference": _driver(REFERENCE_C, work / "reference"), "pool_swapped": _driver(hostile, work / "built"),
            "fork": _driver(forks, work / "forks")}


def test_every_pool_of_an_honest_driver_is_a_window_on_the_grader_file(drivers: dict[str, Path], box: Sandbox) -> None:
    """The control: two pools in one driver, each the grader's file as the driver's descriptor names it (read from
    outside the sandbox), neither counted as a block, and what the engine writes is in the file the grader reads."""
    adapter = CAdapter(drivers["reference"], sandbox=box)
    try:
        adapter.llm_init(4096)
        engine = adapter.llm_init(4096)
        assert adapter._listener is not None, "the driver handed over no seccomp listener"
        assert adapter._listener.ledger.outside == 0 and adapter._listener.ledger.live_blocks == 4  # 2 engines
        assert adapter.create_sequence(engine, 1, 1) is not None and adapter.append_kv(engine, 1, 7) == 0
        seen = adapter.observe(engine)
        assert seen.engine is not None and seen.guard_before == GUARD
        block = seen.engine.sequences[0].block_table[0][0]
        assert seen.pool is not None and seen.pool[block * 64 + 4 : block * 64 + 8] == (7).to_bytes(4, "little")
    finally:
        adapter.close()


def test_a_file_put_at_the_pools_number_maps_no_pool(drivers: dict[str, Path], box: Sandbox) -> None:
    """pool_swapped: its first pool is the grader's (the driver maps it before the submission's code runs), and the
    swap made in that llm_init leaves the next one no pool: the call fails, in the reader's terms."""
    adapter = CAdapter(drivers["pool_swapped"], sandbox=box)
    try:
        assert adapter.llm_init(4096) is not None
        assert adapter._listener is not None and adapter._listener.ledger.outside == 0
        with pytest.raises(ImplementationFailure, match="cannot map a pool of 4096 bytes: descriptor [0-9]+ no longer "
                                                        "names the grader's memory file"):
            adapter.llm_init(4096)
    finally:
        adapter.close()


def test_a_driver_that_hands_over_its_mappings_has_one_thread_whatever_its_command_line(
        drivers: dict[str, Path], box: Sandbox) -> None:
    """The look at the descriptor and the kernel's mapping see the same one only while no other thread or process
    shares the driver's descriptors: a driver with the ledger forbids processes even when told not to (SANDBOX 0,
    `seccomp=False`), so the fork hostile's create_sequence dies of SIGSYS (without the filter its fork failed,
    EAGAIN under RLIMIT_NPROC, and the call returned as the reference's: a limit that binds no root process)."""
    adapter = CAdapter(drivers["fork"], seccomp=False, sandbox=box)
    try:
        engine = adapter.llm_init(4096)
        assert adapter._listener is not None, "the driver handed over no seccomp listener"
        with pytest.raises(ImplementationFailure, match=r"made a forbidden system call \(SIGSYS\)"):
            adapter.create_sequence(engine, 1, 1)
    finally:
        adapter.close()
