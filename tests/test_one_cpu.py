"""oracle/one_cpu.py: a grade's thread and the processes it starts on one CPU, its CPUs as they were after."""

import os
import subprocess
import sys

import pytest

from oracle.one_cpu import current_cpu, on_one_cpu


def test_current_cpu_is_one_the_thread_may_run_on() -> None:
    assert current_cpu() in os.sched_getaffinity(0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin")
def test_a_grade_runs_on_one_cpu_with_its_children_and_may_run_anywhere_after() -> None:
    before = os.sched_getaffinity(0)
    with on_one_cpu():
        inside = os.sched_getaffinity(0)
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True).stdout.strip()
        with on_one_cpu():  # an inner grade keeps the outer one's CPU
            assert os.sched_getaffinity(0) == inside
    assert len(inside) == 1 and inside <= before
    assert child == str(sorted(inside))
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin")
def test_the_cpus_come_back_when_the_grade_raises() -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError):
        with on_one_cpu():
            raise RuntimeError("a grade that fails")
    assert os.sched_getaffinity(0) == before
