"""CAdapter edges on the C reference: bad arguments, observing an engine that is not the live one, a reply
larger than one pipe read, a driver killed from outside, fault injection cleared, output capture, and a
driver that the garbage collector stops."""

import gc
import os
import shutil
import signal
from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter, load_c
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.spec import BLOCK_SIZE, MAX_LOGICAL_BLOCKS, MAX_KV

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
REFERENCE = Path(__file__).resolve().parents[1] / "engine" / "c"


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    return load_c(REFERENCE, tmp_path_factory.mktemp("cbuild"))


@pytest.fixture
def adapter(factory):
    a = factory()
    yield a
    a.close()


def test_a_missing_driver_and_bad_arguments_are_refused(tmp_path, adapter):
    with pytest.raises(ValueError, match="does not exist; build the submission first"):
        CAdapter(tmp_path / "driver")
    with pytest.raises(ValueError, match="cannot be negative"):
        adapter.llm_init(-1)
    with pytest.raises(ValueError, match="k counts from 1"):
        adapter.fail_allocation(0)
    engine = adapter.llm_init(4 * BLOCK_SIZE)
    assert repr(engine) == f"Pointer(0x{engine.address:x})"
    with pytest.raises(ValueError, match="argument out of range for a C int"):
        adapter.create_sequence(engine, 2**31, 1)
    with pytest.raises(TypeError, match="not a handle from this adapter: 7"):
        adapter.create_sequence(7, 1, 1)


def test_observing_an_engine_that_is_not_the_live_one_asks_the_driver(adapter):
    first = adapter.llm_init(4 * BLOCK_SIZE)
    assert adapter.create_sequence(first, 1, 17) is not None
    second = adapter.llm_init(6 * BLOCK_SIZE)
    state = adapter.observe(first).engine  # the first engine is still allocated: the driver reads it
    assert (state.total_local_blocks, state.free_local_blocks) == (4, 2)
    assert state.ref_count == (1, 1, 0, 0)
    # the driver vouches only for the sequences returned since the last llm_init: the old list is unknown
    assert state.sequences == () and "belongs to no sequence that create or fork returned" in state.list_error
    live = adapter.observe(second).engine
    assert (live.total_local_blocks, live.free_local_blocks, live.sequences) == (6, 6, ())


def test_a_reply_larger_than_one_pipe_read_is_read_whole(adapter):
    count = 80  # 80 full sequences, 16 L2 tables (1 KiB) each in every reply: over the 64 KiB of one pipe read
    engine = adapter.llm_init(count * MAX_LOGICAL_BLOCKS * BLOCK_SIZE)
    for seq_id in range(count):
        assert adapter.create_sequence(engine, seq_id, MAX_KV) is not None
    state = adapter.observe(engine).engine
    assert len(state.sequences) == count and state.free_local_blocks == 0
    assert all(s.kv_count == MAX_KV and None not in s.block_table for s in state.sequences)


def _driver_process(root: int) -> int:
    """The driver itself, among the sandbox's processes under root (bwrap, its pid 1, the supervisor)."""
    from tests.test_c_adapter import _group, _named

    (driver,) = _named(_group(root), "driver")
    return driver


def test_a_driver_killed_from_outside_fails_the_next_call_with_the_signal(adapter):
    engine = adapter.llm_init(4 * BLOCK_SIZE)
    os.kill(_driver_process(adapter.pid), signal.SIGKILL)
    os.waitid(os.P_PID, adapter.pid, os.WEXITED | os.WNOWAIT)  # the sandbox ended (the adapter reaps it)
    with pytest.raises(ImplementationFailure, match="crashed with SIGKILL"):
        adapter.create_sequence(engine, 1, 1)
    assert adapter.failure == "crashed with SIGKILL" and adapter.pid is None
    with pytest.raises(ImplementationFailure, match="this handle died with the driver: crashed with SIGKILL"):
        adapter.observe(engine)


def test_fault_injection_is_cleared_by_none(adapter):
    engine = adapter.llm_init(4 * BLOCK_SIZE)
    adapter.fail_allocation(1)
    assert adapter.create_sequence(engine, 1, 1) is None and adapter.last_call.injected_failure
    adapter.fail_allocation(None)
    assert adapter.create_sequence(engine, 1, 1) is not None
    assert not adapter.last_call.injected_failure and adapter.last_call.allocations > 0


def test_a_driver_without_a_time_limit_still_answers(factory):
    adapter = CAdapter(factory().driver, timeout=None)
    try:
        engine = adapter.llm_init(4 * BLOCK_SIZE)
        assert adapter.create_sequence(engine, 1, 3) is not None
    finally:
        adapter.close()
    assert adapter.exit_status == 0


def test_output_is_captured_and_reset_when_the_driver_restarts(tmp_path, submission):
    flood = load_c(submission("hostile", "flood"), tmp_path, output_limit=4096)()
    try:
        engine = flood.llm_init(8 * BLOCK_SIZE)
        with pytest.raises(ImplementationFailure, match="wrote more output than allowed"):
            flood.create_sequence(engine, 1, 1)
        assert 0 < len(flood.output) <= 4096 + 1
        flood.llm_init(8 * BLOCK_SIZE)  # a new driver: nothing printed yet
        assert flood.output == ""
    finally:
        flood.close()


def test_the_garbage_collector_stops_a_running_driver(factory):
    adapter = factory()
    adapter.llm_init(4 * BLOCK_SIZE)
    pid = adapter.pid
    del adapter
    gc.collect()
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(pid, os.WNOHANG)
