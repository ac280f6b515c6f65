"""The time limit of a whole grade (`--time-limit`, the grade's budget: oracle/run_cpu.py Budget): CPU seconds of
the grade's process tree, capped at HUNG_WALL times as many seconds of wall clock; items not started before it
has passed are `not_run` with the reason, the report is still written, grade-all hands the limit to every grade
it starts, and a busy machine, which delays a grade without its doing, does not reach it."""

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from oracle.cli import main
from oracle.grading.grader import OUT_OF_TIME, Check, Outcome, run_checks
from oracle.grading.rubric import Rubric, RubricItem
from oracle.hw3.grade import grade, load
from oracle.run_cpu import HUNG_WALL, Budget
from oracle.runtime import PYTHON
from oracle.sandbox import DeadlinePassed, Sandbox
from tests.test_grade import REFERENCE, small_rubric


def _rubric(*ids: str) -> Rubric:
    return Rubric("t", tuple(RubricItem(i, i, 2) for i in ids), "code")


SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def _three_items(slow: Callable[[Budget], None], budget: Budget) -> tuple[list[str], list]:
    """quick, slow, after: run with `budget`, `slow(budget)` doing the middle item's work; which ran, the results."""
    ran: list[str] = []

    def until_the_limit(context: object, options: object) -> Outcome:
        ran.append("slow")
        slow(budget)  # this item takes the grade past its limit
        return Outcome(True)

    def quick(context: object, options: object) -> Outcome:
        ran.append("quick")
        return Outcome(True)

    checks = {"quick": Check("quick", "r", quick), "slow": Check("slow", "r", until_the_limit),
              "after": Check("after", "r", quick)}
    return ran, run_checks(checks, _rubric("quick", "slow", "after"), None, budget=budget)


def _waits_past_the_wall_cap(budget: Budget) -> None:
    while time.monotonic() < budget.wall + HUNG_WALL * budget.limit:
        time.sleep(0.01)


def _runs_a_program_that_computes_past_the_limit(budget: Budget) -> None:
    subprocess.run([sys.executable, "-c", SPIN.format(seconds=2 * budget.limit)], check=True)


@pytest.mark.parametrize("slow, limit", [(_waits_past_the_wall_cap, 0.05),
                                         (_runs_a_program_that_computes_past_the_limit, 0.5)],
                         ids=["waits past the wall-clock cap", "a run computes past the CPU seconds"])
def test_run_checks_runs_nothing_past_its_time_limit_and_the_rest_before_it(slow, limit: float) -> None:
    """An item that waits without computing past HUNG_WALL times the limit (the wall-clock cap), or whose run
    computes past the limit's CPU seconds: the item after it is not run."""
    with Budget(limit) as budget:
        ran, results = _three_items(slow, budget)
    assert ran == ["quick", "slow"]
    assert [r.status for r in results] == ["passed", "passed", "not_run"]
    assert results[2].message == f"not run: {OUT_OF_TIME}" and (results[2].points, results[2].max_points) == (0, 2)


def test_run_checks_without_a_time_limit_runs_every_item() -> None:
    checks = {"a": Check("a", "r", lambda c, o: Outcome(False, "no"))}
    (result,) = run_checks(checks, _rubric("a"), None, budget=None)
    assert result.status == "failed" and result.message == "no"


def test_grade_past_its_time_limit_reports_every_item_not_run(tmp_path: Path) -> None:
    with Budget(1e-9) as budget:  # passed at once: its wall-clock cap is 1e-8 s
        report = grade("engine", load(small_rubric(tmp_path / "r.toml", ["create_free", "fork"])), tmp_path,
                       budget=budget)
    assert [(i.id, i.status, i.message) for i in report.items] == [
        ("create_free", "not_run", f"not run: {OUT_OF_TIME}"), ("fork", "not_run", f"not run: {OUT_OF_TIME}")]
    assert report.exit_status == 1 and report.score == 0 and report.max_score == 18


def test_grade_cli_past_its_time_limit_still_writes_every_report(tmp_path: Path) -> None:
    rubric = small_rubric(tmp_path / "r.toml", ["compiles", "fork"])
    files = {name: tmp_path / name for name in ("report.json", "results.json", "junit.xml", "pl.json")}
    status = main(["grade", str(REFERENCE), "--rubric", str(rubric), "--time-limit", "1e-9", "-q",
                   "--json", str(files["report.json"]), "--gradescope", str(files["results.json"]),
                   "--junit", str(files["junit.xml"]), "--prairielearn", str(files["pl.json"])])
    assert status == 1
    report = json.loads(files["report.json"].read_text())
    assert {i["status"] for i in report["items"]} == {"not_run"} and report["grader_error"] is None
    assert OUT_OF_TIME in report["items"][0]["message"]
    assert json.loads(files["results.json"].read_text())["score"] == 0
    assert json.loads(files["pl.json"].read_text())["score"] == 0
    assert files["junit.xml"].read_text().count('type="not_run"') == 2


def test_grade_all_hands_its_time_limit_to_each_grade(tmp_path: Path) -> None:
    batch = tmp_path / "class"
    (batch / "alice").mkdir(parents=True)
    (batch / "alice" / "llm_memory.c").write_bytes((REFERENCE / "llm_memory.c").read_bytes())
    rubric = small_rubric(tmp_path / "r.toml", ["compiles"])
    assert main(["grade-all", str(batch), "--rubric", str(rubric), "--time-limit", "1e-9", "-q"]) == 1
    (row,) = csv.DictReader((tmp_path / "class-grades" / "scores.csv").open())
    assert (row["submission"], row["status"], row["compiles"], row["folder"]) == ("alice", "failed", "0", "alice")
    report = json.loads((tmp_path / "class-grades" / "alice" / "report.json").read_text())
    assert report["items"][0]["message"] == f"not run: {OUT_OF_TIME}"


def test_the_time_limit_stops_a_call_in_progress_and_the_item_is_not_run(tmp_path: Path, submission) -> None:
    """A submission that hangs (spins) in a call, with a per-call limit longer than the grade's time limit: the
    call is stopped once the grade's CPU seconds are spent (its sandbox killed), long before the call's own 60,
    the item is not run for the time limit (not "hung": the submission did not get its full per-call time), and
    the rest is not run either."""
    from oracle.grading.grader import OUT_OF_TIME_DURING

    rubric = load(small_rubric(tmp_path / "rubric.toml", ["compiles", "fork", "append_cow"]))
    with Budget(8) as budget:
        report = grade(str(submission("hostile", "hang")), rubric, tmp_path / "out", timeout=60.0, budget=budget)
        assert budget.used() < 30
    items = {item.id: item for item in report.items}
    assert items["compiles"].status == "passed"
    assert items["fork"].status == "not_run" and items["fork"].message == f"not run: {OUT_OF_TIME_DURING}"
    assert items["append_cow"].status == "not_run" and items["append_cow"].message == f"not run: {OUT_OF_TIME}"


ROOT = Path(__file__).resolve().parents[1]


def _in_a_fresh_process(scenario: str, *args: str) -> None:
    """Runs `scenario`, a function of this module, in a new Python. A grade's budget counts its process's whole
    tree, and a test worker's tree holds what earlier tests left: in ci36 the two tests that run here failed in the
    full suite (at 88 %) and passed alone; a grade runs in a process of its own (`pagedcheck grade`)."""
    code = f"import sys\nfrom tests.test_grade_time_limit import {scenario}\n{scenario}(*sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_run_is_waited_for_to_its_end_past_the_time_the_limit_could_have_taken() -> None:
    """A sandboxed run that sleeps 3 s under a grade's limit of 2 CPU seconds: the wait is cut short where the
    limit could have been spent (2 s of CPU on one core, less on several), the limit is asked again, has not
    passed (the run computed nothing), and the run is waited for to its end (its exit status, not DeadlinePassed)."""
    _in_a_fresh_process("waited_for_to_its_end")


def waited_for_to_its_end() -> None:
    with Budget(2) as budget, Sandbox(budget=budget) as box:
        assert budget.left() <= 2  # less than the run's 3 s: its wait is cut short at least once
        done = box.run(["sleep", "3"], timeout=30)
        assert done.status == 0 and not budget.passed()


@pytest.mark.parametrize("argv, limit", [([str(PYTHON), "-c", SPIN.format(seconds=5)], 0.3), (["sleep", "30"], 0.2)],
                         ids=["computes past the CPU seconds", "waits past the wall-clock cap"])
def test_a_run_under_way_when_the_time_limit_passes_is_stopped(argv: list[str], limit: float) -> None:
    """A run that spins past the grade's CPU seconds, or sleeps past its wall-clock cap (HUNG_WALL times the
    limit), each with a timeout of its own far longer: DeadlinePassed, the run killed."""
    with Budget(limit) as budget, Sandbox(budget=budget) as box:
        with pytest.raises(DeadlinePassed):
            box.run(argv, timeout=120)
        assert budget.passed() and not box._procs


HOG = SPIN + "print(time.process_time(), flush=True)\n"


def _busy_machine(seconds: float) -> float:
    """Another process, none of this one's tree (started by one that ends at once), computes `seconds` CPU seconds
    while the grade waits for it to end, as a grade on a busy machine waits for a CPU; the CPU seconds it used."""
    read, write = os.pipe()
    orphan = (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {HOG.format(seconds=seconds)!r}], "
              f"stdout={write}, pass_fds=({write},), start_new_session=True)\n")
    subprocess.run([sys.executable, "-c", orphan], pass_fds=(write,), check=True)
    os.close(write)
    with os.fdopen(read) as printed:  # read until it ends (no CPU of the grade's spent waiting)
        return float(printed.read())


def test_a_busy_machine_does_not_reach_the_grade_s_time_limit(tmp_path: Path) -> None:
    """Between two items of a grade, another process (not the grade's) computes for more CPU seconds than the
    grade's whole limit while the grade waits: the wall clock passes the limit, the grade's own CPU seconds stay
    under it, and the item after is run and passes (a wall-clock time limit would leave it `not_run`)."""
    _in_a_fresh_process("busy_machine_between_items", str(tmp_path))


def busy_machine_between_items(folder: str) -> None:
    tmp_path = Path(folder)
    limit = 4.0
    hog: list[float] = []

    def on_item(item) -> None:
        if item.id == "compiles":
            hog.append(_busy_machine(limit + 1))

    rubric = load(small_rubric(tmp_path / "r.toml", ["compiles", "null_engine"]))
    with Budget(limit) as budget:
        report = grade(str(REFERENCE), rubric, tmp_path / "out", on_item=on_item, budget=budget)
        used = budget.used()
    assert hog and hog[0] > limit  # the other process's CPU seconds, hence more wall clock than the limit
    assert used < limit, used
    assert [(item.id, item.status) for item in report.items] == [("compiles", "passed"), ("null_engine", "passed")]
