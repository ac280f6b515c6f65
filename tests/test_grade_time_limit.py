"""The time limit of a whole grade (`--time-limit`): items not started by the deadline are `not_run` with the
reason, the report is still written, and grade-all hands the limit to every grade it starts."""

import csv
import json
import time
from pathlib import Path

from oracle.cli import main
from oracle.grading.grader import OUT_OF_TIME, Check, Outcome, run_checks
from oracle.grading.rubric import Rubric, RubricItem
from oracle.hw3.grade import grade, load
from tests.test_grade import REFERENCE, small_rubric


def _rubric(*ids: str) -> Rubric:
    return Rubric("t", tuple(RubricItem(i, i, 2) for i in ids), "code")


def test_run_checks_runs_nothing_past_its_deadline_and_the_rest_before_it() -> None:
    deadline = time.monotonic() + 0.05
    ran: list[str] = []

    def until_the_deadline(context: object, options: object) -> Outcome:
        ran.append("slow")
        while time.monotonic() < deadline:  # this item takes the grade past its deadline
            time.sleep(0.01)
        return Outcome(True)

    def quick(context: object, options: object) -> Outcome:
        ran.append("quick")
        return Outcome(True)

    checks = {"quick": Check("quick", "r", quick), "slow": Check("slow", "r", until_the_deadline),
              "after": Check("after", "r", quick)}
    results = run_checks(checks, _rubric("quick", "slow", "after"), None, deadline=deadline)
    assert ran == ["quick", "slow"]
    assert [r.status for r in results] == ["passed", "passed", "not_run"]
    assert results[2].message == f"not run: {OUT_OF_TIME}" and (results[2].points, results[2].max_points) == (0, 2)


def test_run_checks_without_a_deadline_runs_every_item() -> None:
    checks = {"a": Check("a", "r", lambda c, o: Outcome(False, "no"))}
    (result,) = run_checks(checks, _rubric("a"), None, deadline=None)
    assert result.status == "failed" and result.message == "no"


def test_grade_past_its_deadline_reports_every_item_not_run(tmp_path: Path) -> None:
    report = grade("engine", load(small_rubric(tmp_path / "r.toml", ["create_free", "fork"])), tmp_path,
                   deadline=time.monotonic() - 1)
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


def test_the_deadline_stops_a_call_in_progress_and_the_item_is_not_run(tmp_path: Path, submission) -> None:
    """A submission that hangs in a call, with a per-call timeout longer than the grade's time limit: the call
    is stopped at the deadline (its sandbox killed), the item is not run for the time limit (not "hung": the
    submission did not get its full per-call time), and the rest is not run either."""
    from oracle.grading.grader import OUT_OF_TIME_DURING

    rubric = load(small_rubric(tmp_path / "rubric.toml", ["compiles", "fork", "append_cow"]))
    start = time.monotonic()
    report = grade(str(submission("hostile", "hang")), rubric, tmp_path / "out", timeout=60.0,
                   deadline=time.monotonic() + 8)
    assert time.monotonic() - start < 30
    items = {item.id: item for item in report.items}
    assert items["compiles"].status == "passed"
    assert items["fork"].status == "not_run" and items["fork"].message == f"not run: {OUT_OF_TIME_DURING}"
    assert items["append_cow"].status == "not_run" and items["append_cow"].message == f"not run: {OUT_OF_TIME}"
