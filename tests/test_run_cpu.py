"""oracle/run_cpu.py and the C adapter's timeouts judged in the run's CPU seconds: a busy machine, which delays a
program without its doing, changes no verdict; a program that spins or waits past its limit is still hung."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.observation import ImplementationFailure
from oracle.run_cpu import HUNG_WALL, RunClock, SafetyNet, children

REFERENCE = Path(__file__).resolve().parents[1] / "engine" / "c"
OPENING = "Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)\n{\n"


def _tree(root: int) -> list[int]:
    todo, found = [root], []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children(pid)
    return found


def _starve(root: int) -> tuple[threading.Thread, float]:
    """Stops every process of the run under `root` for 1.5 s, 0.05 s from now, as a loaded machine starves it;
    the thread doing it, and when it started."""
    tree = _tree(root)

    def starve() -> None:
        time.sleep(0.05)
        for pid in tree:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(1.5)
        for pid in tree:
            os.kill(pid, signal.SIGCONT)

    starver = threading.Thread(target=starve)
    started = time.monotonic()
    starver.start()
    return starver, started


def test_the_clock_counts_a_spinning_child_and_not_a_sleeping_one() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"
                             "print('spun', flush=True)\ntime.sleep(30)"], stdout=subprocess.PIPE, text=True)
    sleep = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        spinning, sleeping = RunClock(spin.pid), RunClock(sleep.pid)
        assert spin.stdout is not None and spin.stdout.readline() == "spun\n"  # its 0.6 s of CPU spent, however loaded the machine
        assert spinning.seconds(walk=True) >= 0.5
        assert sleeping.seconds(walk=True) < 0.1
        spinning.close(), sleeping.close()
    finally:
        for proc in (spin, sleep):
            proc.kill()
            proc.wait()


def _adapter(tmp_path: Path, body: str, timeout: float) -> CAdapter:
    """The reference with `body` run first in create_sequence, built and driven with `timeout` s a call."""
    source = (REFERENCE / "llm_memory.c").read_text()
    before, after = source.split(OPENING)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "llm_memory.c").write_text(before + "#include <time.h>\n#include <unistd.h>\n" + OPENING + body + after)
    result = build(tmp_path / "sub" / "llm_memory.c", tmp_path / "cache")
    assert result.ok and result.driver is not None, result.message
    return CAdapter(result.driver, timeout=timeout)


SPIN = "    { clock_t end = clock() + CLOCKS_PER_SEC / 5; while (clock() < end) ; }  /* 0.2 s of CPU */\n"


def test_a_call_delayed_by_a_busy_machine_is_not_hung(tmp_path: Path) -> None:
    """The run is stopped for 1.5 s (as a loaded machine would starve it) in the middle of a call that needs
    0.2 s of CPU against a 0.5 s limit: its answer is waited for and judged, not called a hang."""
    adapter = _adapter(tmp_path, SPIN, timeout=0.5)
    try:
        engine = adapter.llm_init(64 * 10)
        assert adapter._proc is not None
        starver, started = _starve(adapter._proc.pid)
        assert adapter.create_sequence(engine, 1, 1) is not None
        starver.join()
        assert time.monotonic() - started >= 1.5  # it was waited for past its wall-clock limit
    finally:
        adapter.close()


@pytest.mark.parametrize("body, seconds", [
    ("    for (;;) ;  /* spins */\n", 0.5),
    ("    for (;;) pause();  /* waits without computing */\n", HUNG_WALL * 0.5),
], ids=["spins", "waits"])
def test_a_call_that_spins_or_waits_past_its_limit_is_hung(tmp_path: Path, body: str, seconds: float) -> None:
    adapter = _adapter(tmp_path, body, timeout=0.5)
    try:
        engine = adapter.llm_init(64 * 10)
        started = time.monotonic()
        with pytest.raises(ImplementationFailure, match="hung: no answer within 0.5 s"):
            adapter.create_sequence(engine, 1, 1)
        assert time.monotonic() - started >= seconds * 0.9
    finally:
        adapter.close()


SLOW_PYTHON = '''
import time as _time

_create = create_sequence


def create_sequence(engine, seq_id, initial_kv_len):
    end = _time.process_time() + 0.2  # 0.2 s of CPU
    while _time.process_time() < end:
        pass
    return _create(engine, seq_id, initial_kv_len)
'''


def test_a_python_call_delayed_by_a_busy_machine_is_not_hung(tmp_path: Path) -> None:
    """The same for a Python submission's child (oracle/child.py): stopped for 1.5 s in a call that needs 0.2 s
    of CPU against a 0.5 s limit, it is answered, not called a hang."""
    from oracle.hw3.pyremote import served

    engine_source = (Path(__file__).resolve().parents[1] / "engine" / "llm_memory.py").read_text()
    (tmp_path / "slow_engine.py").write_text(engine_source + SLOW_PYTHON)
    with served(str(tmp_path / "slow_engine.py"), timeout=0.5) as remote:
        adapter = remote()
        engine = adapter.llm_init(64 * 10)
        assert remote.child._proc is not None
        starver, started = _starve(remote.child._proc.pid)
        assert adapter.create_sequence(engine, 1, 1) is not None
        starver.join()
        assert time.monotonic() - started >= 1.5


def test_the_safety_net_counts_the_cpu_of_the_graders_runs_not_the_wall_clock() -> None:
    """A fuzz's time limit (SafetyNet) is CPU seconds of the grader's whole process tree: a run the grader started
    that spins 0.6 s of CPU and ends reaches a 0.3 s limit (its time counted once reaped, its /proc file let go), a
    run that waits 1 s without computing does not reach a 0.8 s one (it is no hang: the wall clock caps it only at
    HUNG_WALL times the limit)."""
    spinning = SafetyNet(0.3)
    try:
        spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.6\n"
                                 "while time.process_time() < end: pass\nprint('spun', flush=True)\ninput()"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert spin.stdout is not None and spin.stdout.readline() == "spun\n"
        assert spinning.passed()  # while it runs
        spin.communicate("\n")  # it ends, and is reaped
        assert spinning.passed() and spin.pid not in spinning.clock._stats
    finally:
        spinning.close()
    waiting = SafetyNet(0.8)
    try:
        subprocess.run(["sleep", "1"], check=True)
        assert not waiting.passed()
    finally:
        waiting.close()

CHURN = ("    for (;;) { volatile char *p = malloc(16); if (p) p[0] = 1; free((void *)p); }"
         "  /* allocates and frees for ever */\n")


def test_a_call_that_allocates_and_frees_for_ever_is_hung_within_a_bounded_count_of_mapping_calls(
        tmp_path: Path) -> None:
    """An endless loop of mapping calls (each malloc and free one the grader's ledger answers, heap_notify.py):
    the time the driver waits on those answers is the grader's, not counted against its wall-clock cap
    (run_cpu.py), and each adds the fence's work to its CPU limit (MAPPING_CALL_CPU), yet it is still hung: by its
    CPU time, or at the latest once it has made the mapping calls its limit allows, a count
    (MAPPING_CALLS_PER_SECOND a second of the limit), so the grader's work for the call is bounded."""
    from oracle.native.heap_notify import MAPPING_CALLS_PER_SECOND

    adapter = _adapter(tmp_path, CHURN, timeout=0.2)
    try:
        engine = adapter.llm_init(64 * 10)
        listener = adapter._listener
        if listener is None:
            pytest.skip("no seccomp user notification here: no ledger answers the driver's mapping calls")
        with pytest.raises(ImplementationFailure, match=r"hung: no answer within 0\.2 s"):
            adapter.create_sequence(engine, 1, 1)
        assert 0 < listener.call_handled <= MAPPING_CALLS_PER_SECOND * 0.2
    finally:
        adapter.close()


def test_a_call_past_its_count_of_mapping_calls_is_hung_by_that_count_whatever_its_cpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a count of 1,000 mapping calls a second of the limit (a 0.5 s limit: 500), the endless loop of
    allocations is ended by the count, long before its CPU time: the 501st mapping call is left unanswered and
    the call judged hung, its message naming the count."""
    from oracle.native import driver_process

    monkeypatch.setattr(driver_process, "MAPPING_CALLS_PER_SECOND", 1000)
    adapter = _adapter(tmp_path, CHURN, timeout=0.5)
    try:
        engine = adapter.llm_init(64 * 10)
        listener = adapter._listener
        if listener is None:
            pytest.skip("no seccomp user notification here: no ledger answers the driver's mapping calls")
        with pytest.raises(ImplementationFailure, match=r"hung: no answer within 0\.5 s \(it made 500 allocations, "
                           r"frees, other memory-mapping calls and system calls on heap memory, the most a call "
                           r"may make in a limit of 0\.5 s"):
            adapter.create_sequence(engine, 1, 1)
        assert listener.call_handled == 500
    finally:
        adapter.close()



def test_a_call_that_churns_its_allocator_is_judged_by_its_own_time(tmp_path: Path) -> None:
    """Review 14's allocator_churn (tests/submissions/hostile/review14/allocator_churn.patch: llm_init makes 60,000
    malloc(16)/free pairs, some 179,000 mapping calls the ledger answers) is a correct llm_init: at a 1 s limit it
    returns an engine, however long the grader took to answer (its answering is not charged to the call's wall
    clock) and whatever the fence's mapping calls cost in the kernel (MAPPING_CALL_CPU each, added to its limit)."""
    import shutil

    patch = Path(__file__).resolve().parent / "submissions" / "hostile" / "review14" / "allocator_churn.patch"
    shutil.copytree(REFERENCE, tmp_path / "sub")
    subprocess.run(["patch", "-s", "-p0", "-i", str(patch)], cwd=tmp_path / "sub", check=True)
    result = build(tmp_path / "sub" / "llm_memory.c", tmp_path / "cache")
    assert result.ok and result.driver is not None, result.message
    adapter = CAdapter(result.driver, timeout=1.0)
    try:
        assert adapter.llm_init(64 * 10) is not None
        if adapter._listener is not None:
            assert adapter._listener.call_handled > 150_000  # the fence answered every malloc and free
    finally:
        adapter.close()


ADVICE = ("    { extern int posix_madvise(void *, size_t, int);  /* advice on a page nobody maps, 2,000 times */\n"
          "      for (int i = 0; i < 2000; i++) (void)posix_madvise((void *)4096, 4096, 0); }\n")


def test_the_fences_allowance_is_earned_by_its_grants_and_frees_not_by_the_programs_mapping_calls(
        tmp_path: Path) -> None:
    """Review 16's system_time_bought: a create_sequence that first makes 2,000 mapping calls of its own (advice on
    a page nobody maps, each answered by the ledger) earns no more of the fence's CPU allowance than the reference's
    (its Sequence, L1 table and L2 table: three grants); the count a fuzz's safety net allows by (run_cpu.ANSWERED)
    grows by the same; free_sequence's three frees earn FREE_CALLS each."""
    from oracle.native.ledger import FREE_CALLS
    from oracle.run_cpu import ANSWERED

    adapter = _adapter(tmp_path, ADVICE, timeout=5.0)
    try:
        engine = adapter.llm_init(64 * 10)
        listener = adapter._listener
        if listener is None:
            pytest.skip("no seccomp user notification here: no ledger answers the driver's mapping calls")
        answered = ANSWERED.total
        assert adapter.create_sequence(engine, 1, 1) is not None
        assert listener.call_handled >= 2000  # every advice handed to the grader and answered
        assert (listener.ledger.grants, listener.call_fence, ANSWERED.total - answered) == (3, 3, 3)
        assert adapter.free_sequence(engine, 1) == 0
        assert (listener.ledger.frees, listener.call_fence) == (3, 3 * FREE_CALLS)
    finally:
        adapter.close()
