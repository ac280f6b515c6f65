"""The fuzz item (check_fuzz) gives the same report for the same submission and seed on an idle machine and
on a busy one: its budgets are counts (programs, shrink replays), and the wall clock is only a safety net.
A slowed-down submission (tests/slowed/: every call but append_kv sleeps first) is graded once alone and once
while another grade of it runs beside it in a second process; the reports agree, timings aside."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.grading.report import timing_free
from oracle.hw3.grade import grade, load
from tests.conftest import broken_python

ROOT = Path(__file__).resolve().parent.parent
RUBRIC = ('[[item]]\nid = "fuzz"\npoints = 10\n[item.options]\n'
          'seed = 110\nexamples = 30\nsteps = 20\nshrink_replays = 2000\nseconds = 300.0\n')


@pytest.mark.parametrize("module, status", [("tests.slowed.fork_no_incref", "failed"), ("tests.slowed.engine", "passed")])
def test_check_fuzz_gives_the_same_report_idle_and_beside_another_grade(tmp_path: Path, module: str, status: str) -> None:
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    alone = grade(module, load(rubric), tmp_path / "alone").as_dict()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    beside = subprocess.Popen(
        [sys.executable, "-m", "oracle.cli", "grade", module, "--rubric", str(rubric), "--out", str(tmp_path / "beside")],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        busy = grade(module, load(rubric), tmp_path / "busy").as_dict()
    finally:
        beside.wait(timeout=600)
    assert beside.returncode == (1 if status == "failed" else 0)

    (item,) = alone["items"]
    assert item["status"] == status, item["message"]
    if status == "failed":
        assert " of 30 programs" in item["message"] and item["program"].count("\n") >= 5
    assert timing_free(alone) == timing_free(busy)


def test_check_fuzz_numbers_the_failing_call_as_the_call_list_does(tmp_path: Path) -> None:
    """no_cow fails on the append a `branch` line makes after its fork: one line, two calls. The message numbers
    calls as the call list (and a C repro's steps) do; the printed program's line is the picture's to mark."""
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    report = grade(broken_python("no_cow"), load(rubric), tmp_path)
    (item,) = report.items
    number = int(item.message.split("fuzz: step ", 1)[1].split()[0])
    assert item.message.startswith(f"fuzz: step {number} append_kv(engine, "), item.message
    marked = [line.split()[0] for line in item.details.splitlines() if line.endswith("<-- differs here")]
    assert marked == [str(number)] and f"  {number}: append_kv(engine, " in item.student
    lines = item.program.splitlines()
    steps = lines[lines.index("state = HW3Machine()") + 1 :]
    assert steps[report.evidence["fuzz"].program_step - 1].startswith("state.branch("), (item.message, steps)
    assert "may not be minimal" not in item.message  # no budget cut the shrinking short


def test_check_fuzz_says_when_its_shrink_budget_cut_the_shrinking_short(tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.replace("shrink_replays = 2000", "shrink_replays = 3"))
    (item,) = grade(broken_python("no_cow"), load(rubric), tmp_path).items
    assert item.status == "failed"
    assert item.message.endswith(" (shrinking stopped after its 3 replays: the program may not be minimal)"), item.message
