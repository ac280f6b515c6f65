"""The C reference solution: official flags, same observations as the Python engine, no trace left by a
failing call (not even under injected malloc failure), and valgrind-clean through the driver."""

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

import engine.llm_memory
from oracle.hw3.adapters import PythonAdapter
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import HEADER_DIR, OFFICIAL_FLAGS, build
from oracle.native.valgrind import finish, valgrind_adapter
from oracle.hw3.observation import Observation

REFERENCE = Path(__file__).resolve().parents[1] / "engine" / "c"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cbuild")


@pytest.fixture(scope="module")
def driver(workdir: Path) -> Path:
    result = build(REFERENCE, workdir)
    assert result.ok, result.message
    assert result.driver is not None
    return result.driver


@pytest.fixture
def c_adapter(driver: Path):
    adapter = CAdapter(driver)
    yield adapter
    adapter.close()


def test_reference_compiles_with_the_official_flags_without_a_warning(tmp_path: Path) -> None:
    shutil.copyfile(REFERENCE / "llm_memory.c", tmp_path / "llm_memory.c")
    cmd = ["gcc", *OFFICIAL_FLAGS, "-I", str(HEADER_DIR), "-c", "llm_memory.c", "-o", "llm_memory.o"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout + proc.stderr == "", proc.stderr


def test_build_is_cached(workdir: Path, driver: Path) -> None:
    mtime = driver.stat().st_mtime_ns
    again = build(REFERENCE / "llm_memory.c", workdir)
    assert again.ok and again.driver == driver and driver.stat().st_mtime_ns == mtime


Step = Callable[[Any, list[Any]], Any]  # (adapter, handles) -> result; handles[0] is the engine


def _run(adapter: Any, pool_size: int, steps: list[Step]) -> list[tuple[Any, Observation]]:
    handles = [adapter.llm_init(pool_size)]
    trace = [(handles[0] is None, _plain(adapter.observe(handles[0])))]
    for step in steps:
        result = step(adapter, handles)
        engine = handles[0]
        trace.append((result is None if not isinstance(result, int) else result, _plain(adapter.observe(engine))))
    return trace


def _plain(observation: Observation) -> Observation:
    return dataclasses.replace(observation, heap=None)  # the Python engine has no heap to count


def _destroy(adapter: Any, handles: list[Any]) -> int:
    result = adapter.llm_destroy(handles[0])
    handles[0] = None
    return result


SCENARIOS: dict[str, tuple[int, list[Step]]] = {
    "create_fork_cow_free": (
        64 * 8,
        [
            lambda a, h: a.create_sequence(h[0], 1, 20),
            lambda a, h: a.fork_sequence(h[0], 1, 2),
            lambda a, h: a.append_kv(h[0], 2, 111),  # CoW of the half-full block
            lambda a, h: a.append_kv(h[0], 1, 222),  # now exclusive: no copy
            lambda a, h: a.create_sequence(h[0], 3, 33),
            lambda a, h: a.free_sequence(h[0], 1),
            lambda a, h: a.create_sequence(h[0], 4, 1),  # first fit reuses block 0
            lambda a, h: a.append_kv(h[0], 4, -7),
            _destroy,
        ],
    ),
    "failing_calls": (
        64 * 2,
        [
            lambda a, h: a.create_sequence(h[0], 1, 0),
            lambda a, h: a.create_sequence(h[0], 1, 33),  # needs 3 blocks of 2
            lambda a, h: a.create_sequence(h[0], 1, 32),
            lambda a, h: a.create_sequence(h[0], 1, 1),  # duplicate id
            lambda a, h: a.fork_sequence(h[0], 9, 2),  # no parent
            lambda a, h: a.fork_sequence(h[0], 1, 1),  # id taken
            lambda a, h: a.fork_sequence(h[0], 1, 2),
            lambda a, h: a.append_kv(h[0], 2, 5),  # CoW with no free block: OOM
            lambda a, h: a.append_kv(h[0], 1, 5),  # new block with none free: OOM
            lambda a, h: a.append_kv(h[0], 7, 5),
            lambda a, h: a.free_sequence(h[0], 7),
            lambda a, h: a.create_sequence(None, 5, 1),
            lambda a, h: a.fork_sequence(None, 1, 5),
            lambda a, h: a.append_kv(None, 1, 5),
            lambda a, h: a.free_sequence(None, 1),
            lambda a, h: a.llm_destroy(None),
            _destroy,
        ],
    ),
    "second_l2_table": (
        64 * 20,
        [
            lambda a, h: a.create_sequence(h[0], 1, 16 * 16),  # fills L1 slot 0 exactly
            lambda a, h: a.fork_sequence(h[0], 1, 2),
            *[lambda a, h, i=i: a.append_kv(h[0], 2, i) for i in range(20)],
            lambda a, h: a.free_sequence(h[0], 2),
            _destroy,
        ],
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_reference_observations_match_the_python_engine(name: str, c_adapter: CAdapter) -> None:
    pool_size, steps = SCENARIOS[name]
    python = PythonAdapter(engine.llm_memory)
    assert _run(c_adapter, pool_size, steps) == _run(python, pool_size, steps)


@pytest.mark.parametrize("pool_size, null_pool", [(63, False), (0, False), (640, True)])
def test_refused_init_matches_the_python_engine(pool_size: int, null_pool: bool, c_adapter: CAdapter) -> None:
    python = PythonAdapter(engine.llm_memory)
    assert c_adapter.llm_init(pool_size, null_pool) is None
    assert python.llm_init(pool_size, null_pool) is None
    assert _plain(c_adapter.observe(None)) == _plain(python.observe(None))


def test_failing_calls_allocate_nothing(c_adapter: CAdapter) -> None:
    e = c_adapter.llm_init(64 * 2)
    assert c_adapter.create_sequence(e, 1, 32) is not None
    assert c_adapter.fork_sequence(e, 1, 2) is not None
    failing = [
        lambda: c_adapter.create_sequence(e, 3, 1),
        lambda: c_adapter.create_sequence(e, 1, 1),
        lambda: c_adapter.fork_sequence(e, 1, 1),
        lambda: c_adapter.append_kv(e, 1, 1),
        lambda: c_adapter.free_sequence(e, 9),
    ]
    for call in failing:
        before = c_adapter.observe(e)
        assert call() in (None, -1)
        assert c_adapter.last_call.allocations == 0 and c_adapter.last_call.frees == 0
        after = c_adapter.observe(e)
        assert after.heap.call_allocations == 0
        assert (after.engine, after.pool, after.heap.live_blocks) == (before.engine, before.pool, before.heap.live_blocks)


def _allocations_of(adapter: CAdapter, call: Callable[[], Any]) -> int:
    assert call() not in (None, -1)
    return adapter.last_call.allocations


@pytest.mark.parametrize(
    "setup, call",
    [
        (lambda a, e: None, lambda a, e: a.create_sequence(e, 1, 16 * 16 * 2 + 1)),  # 2 + 3 L2 tables
        (lambda a, e: a.create_sequence(e, 1, 16 * 40), lambda a, e: a.fork_sequence(e, 1, 2)),
        (lambda a, e: a.create_sequence(e, 1, 16 * 16), lambda a, e: a.append_kv(e, 1, 9)),  # new L2
    ],
    ids=["create", "fork", "append"],
)
def test_every_malloc_failure_is_undone(setup: Callable, call: Callable, driver: Path) -> None:
    """Failing the k-th allocation of a call, for every k, leaves state and heap exactly as before."""
    probe = CAdapter(driver)
    e = probe.llm_init(64 * 100)
    setup(probe, e)
    needed = _allocations_of(probe, lambda: call(probe, e))
    probe.close()
    assert needed >= 1
    for k in range(1, needed + 1):
        adapter = CAdapter(driver)
        try:
            e = adapter.llm_init(64 * 100)
            setup(adapter, e)
            before = adapter.observe(e)
            adapter.fail_allocation(k)
            assert call(adapter, e) in (None, -1)
            assert adapter.last_call.injected_failure
            after = adapter.observe(e)
            assert after.engine == before.engine and after.pool == before.pool
            assert after.heap is not None and before.heap is not None
            assert (after.heap.live_blocks, after.heap.live_bytes) == (before.heap.live_blocks, before.heap.live_bytes)
            adapter.fail_allocation(None)
            assert call(adapter, e) not in (None, -1)  # and the same call then succeeds
        finally:
            adapter.close()


def test_destroy_frees_everything(c_adapter: CAdapter) -> None:
    e = c_adapter.llm_init(64 * 50)
    c_adapter.create_sequence(e, 1, 300)
    c_adapter.fork_sequence(e, 1, 2)
    c_adapter.append_kv(e, 2, 1)
    assert c_adapter.llm_destroy(e) == 0
    heap = c_adapter.observe(None).heap
    assert heap is not None and (heap.live_blocks, heap.live_bytes) == (0, 0)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_reference_is_valgrind_clean(driver: Path, tmp_path: Path) -> None:
    log = tmp_path / "valgrind.log"
    adapter = valgrind_adapter(CAdapter, driver, log)
    pool_size, steps = SCENARIOS["create_fork_cow_free"]
    _run(adapter, pool_size, steps)
    verdict = finish(adapter, log)
    assert verdict.clean, verdict.log
    assert "ERROR SUMMARY: 0 errors" in verdict.log


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_reports_a_leak(workdir: Path, tmp_path: Path, submission: Callable[..., Path]) -> None:
    result = build(submission("hostile", "leak"), workdir)
    assert result.ok and result.driver is not None, result.message
    log = tmp_path / "valgrind.log"
    adapter = valgrind_adapter(CAdapter, result.driver, log)
    e = adapter.llm_init(640)
    assert adapter.llm_destroy(e) == 0
    verdict = finish(adapter, log)
    assert not verdict.clean and verdict.exit_status == 99
    assert "definitely lost" in verdict.log
