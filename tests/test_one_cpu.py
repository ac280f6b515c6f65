"""oracle/one_cpu.py: a grade's thread and the processes it starts on one CPU, its CPUs as they were after."""

import json
import os
import subprocess
import sys

import pytest

from oracle.one_cpu import claim_a_cpu, claims_folder, current_cpu, on_one_cpu


def test_current_cpu_is_one_the_thread_may_run_on() -> None:
    assert current_cpu() in os.sched_getaffinity(0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin")
def test_a_grade_runs_on_one_cpu_with_its_children_and_may_run_anywhere_after(own_claims) -> None:
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
def test_the_cpus_come_back_when_the_grade_raises(own_claims) -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError):
        with on_one_cpu():
            raise RuntimeError("a grade that fails")
    assert os.sched_getaffinity(0) == before


@pytest.fixture
def own_claims(tmp_path, monkeypatch) -> str:
    """Claims in a cache of this test's alone, so no grade another test worker runs holds a CPU."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return str(tmp_path)


HOLD_A_GRADE = ("import os, sys\nfrom oracle.one_cpu import on_one_cpu\nwith on_one_cpu():\n"
                "    print(sorted(os.sched_getaffinity(0)), flush=True)\n    sys.stdin.read()\n")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin")
def test_two_grades_at_once_run_on_two_cpus(own_claims) -> None:
    other = subprocess.Popen([sys.executable, "-c", HOLD_A_GRADE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "XDG_CACHE_HOME": own_claims})
    try:
        its_cpus = other.stdout.readline().strip()
        everywhere = os.sched_getaffinity(0)
        os.sched_setaffinity(0, set(json.loads(its_cpus)))  # this grade starts on the CPU the other one holds
        os.sched_setaffinity(0, everywhere)
        with on_one_cpu():
            mine = os.sched_getaffinity(0)
    finally:
        other.communicate("")
    assert its_cpus.startswith("[") and its_cpus.count(",") == 0, its_cpus
    assert len(mine) == 1 and str(sorted(mine)) != its_cpus


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin")
def test_with_every_cpu_claimed_a_grade_runs_where_the_scheduler_puts_it(own_claims) -> None:
    before = os.sched_getaffinity(0)
    held = [claim_a_cpu(before, None) for _ in before]
    try:
        assert sorted(cpu for cpu, _ in held) == sorted(before)
        with on_one_cpu():
            assert os.sched_getaffinity(0) == before
    finally:
        for _, claim in held:
            os.close(claim)
    with on_one_cpu():  # the claims let go, a grade claims again
        assert len(os.sched_getaffinity(0)) == 1


def test_claims_in_a_folder_others_may_write_are_not_made(own_claims) -> None:
    folder = os.path.join(own_claims, "pagedcheck", "cpus")
    os.makedirs(folder)
    os.chmod(folder, 0o777)
    assert claims_folder() is None
    assert claim_a_cpu({0, 1}, 0) is None
    os.chmod(folder, 0o700)
    assert claims_folder() == folder
