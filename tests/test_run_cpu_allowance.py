"""oracle/run_cpu.py's one rule for a CPU limit with the fence's allowance (`cpu_left`: a call's limit, a probe's,
a fuzz's safety net), and what the safety net counts: the CPU of the runs the grader started, never the grader's own
process, the fence's kernel work allowed by a count of mapping calls answered (review 15's churn_per_append and
time_bought_by_advice)."""

import os
import subprocess
import sys
import time

import pytest

from oracle.run_cpu import ANSWERED, MAPPING_CALL_CPU, Cpu, SafetyNet, allowed, cpu_left


def test_user_cpu_is_held_to_the_limit_whatever_the_mapping_calls() -> None:
    """time_bought_by_advice's arithmetic: 0.75 s of computing at a 0.5 s limit is past it, with no mapping call
    or with 40,000 (1 s of allowance), for the allowance pays for the kernel's work only."""
    assert cpu_left(0.5, 0, Cpu(0.75, 0.0)) < 0
    assert cpu_left(0.5, 40_000, Cpu(0.75, 0.01)) == 0.5 - 0.75
    assert cpu_left(0.5, 40_000, Cpu(0.4, 0.01)) > 0  # within its limit, as without the calls


def test_system_cpu_is_allowed_by_the_count_of_mapping_calls() -> None:
    """allocator_churn's arithmetic: 0.05 s of user and 3 s of system CPU at a 1 s limit is past it alone, within it
    with 179,000 mapping calls answered (4.475 s of allowance), past it again with too few."""
    used = Cpu(0.05, 3.0)
    assert cpu_left(1.0, 0, used) < 0
    assert cpu_left(1.0, 179_000, used) == pytest.approx(0.95)  # its user CPU's limit left: min(0.95, 2.425)
    assert allowed(1.0, 179_000) == 1.0 + 179_000 * MAPPING_CALL_CPU
    assert cpu_left(1.0, 60_000, used) < 0  # 1.5 s of allowance: 3.05 s is past 2.5 s


def test_cpu_since_is_the_difference_of_each_kind() -> None:
    assert Cpu(2.0, 1.5).since(Cpu(0.5, 1.0)) == Cpu(1.5, 0.5)


def _spin_here(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_safety_net_does_not_count_the_graders_own_process() -> None:
    """The grader's own work (answering the fence's mapping calls, checking replies) is bounded by the fuzz's
    counts: 0.6 s of the grader's own CPU does not reach a 0.3 s net, which a slower grader would otherwise reach
    sooner (churn_per_append: 0/10 for a correct engine)."""
    net = SafetyNet(0.3)
    try:
        _spin_here(0.6)
        assert not net.passed()
    finally:
        net.close()


SPIN_USER = "import os\nwhile os.times().user < 0.65: sum(range(100_000))\n"  # computes: user CPU
SPIN_SYSTEM = ("import os\nbuf = bytearray(1 << 20)\nf = open('/dev/zero', 'rb', buffering=0)\n"
               "while os.times().system < 0.65: f.readinto(buf)\n")  # the kernel clears the buffer: system CPU


def _run(code: str) -> Cpu:
    """Runs `code` in a child of this process, reaped: its CPU seconds as the kernel counted them."""
    before = os.times()
    subprocess.run([sys.executable, "-c", code], check=True)
    after = os.times()
    return Cpu(after.children_user - before.children_user, after.children_system - before.children_system)


def test_a_run_computing_past_the_net_reaches_it_whatever_the_mapping_calls_answered() -> None:
    net = SafetyNet(0.3)
    try:
        ANSWERED.total += 1_000_000  # 25 s of the fence's allowance, as if answered meanwhile
        used = _run(SPIN_USER)
        assert used.user >= 0.6
        assert net.passed()
    finally:
        net.close()


def test_a_runs_kernel_work_is_allowed_by_the_mapping_calls_answered() -> None:
    """A run that spends 0.6 s in the kernel reaches a 0.3 s net; the same run, with 40,000 mapping calls answered
    meanwhile (1 s of the fence's allowance), does not: the kernel's part of a mapping call is the fence's."""
    for calls, reached in ((0, True), (40_000, False)):
        net = SafetyNet(0.3)
        try:
            ANSWERED.total += calls
            used = _run(SPIN_SYSTEM)
            assert used.system >= 0.6 and used.user < 0.3, used
            assert net.passed() is reached, (calls, used)
        finally:
            net.close()


def test_the_nets_wall_clock_cap_grows_with_the_allowance() -> None:
    """Work that waits without computing is stopped at HUNG_WALL times the limit with the allowance: a 0.02 s net
    has passed after 0.3 s of waiting (a 0.2 s cap), not when 20,000 mapping calls (0.5 s more: a 5.2 s cap) were
    answered."""
    for calls, reached in ((0, True), (20_000, False)):
        net = SafetyNet(0.02)
        try:
            ANSWERED.total += calls
            time.sleep(0.3)
            assert net.passed() is reached
        finally:
            net.close()
