"""What a verdict rests on (oracle/hw3/evidence.py): a probe resting on an edit of the submission's objects is
not graded for a Python submission (no point, no cost, out of the maximum), said once in a student's words in
every output; C is graded as before."""

import json
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.grader import NotApplicable
from oracle.hw3.evidence import EDIT, POOL, RETURNS, STATE, WORDS, not_graded
from oracle.hw3.grade import grade, load
from oracle.hw3.probes import RESTS_ON, not_graded_result
from oracle.hw3.verdicts import Submission, with_probes
from tests.test_grade import small_rubric

SAID = f"Not graded for a Python submission: {WORDS[EDIT]}."


def test_only_an_edit_is_left_out_and_only_for_python() -> None:
    assert not_graded("python", frozenset({RETURNS, STATE, EDIT})) == SAID
    assert not_graded("python", frozenset({RETURNS, STATE, POOL})) is None
    assert not_graded("c", frozenset({RETURNS, STATE, POOL, EDIT})) is None
    assert {name for name, rests_on in RESTS_ON.items() if EDIT in rests_on} == {
        "l1_gap_free", "l1_gap_fork", "l2_hole_free", "l2_hole_fork", "big_pool"}


def _python_submission(tmp_path: Path, *probes: str) -> Submission:
    sub = Submission("mod", "python", None, tmp_path, tmp_path)
    sub._probes = {name: not_graded_result(name, "python") for name in probes}
    return sub


def test_an_item_of_not_graded_probes_alone_is_not_applicable_with_the_students_words(tmp_path: Path) -> None:
    with pytest.raises(NotApplicable) as left_out:
        with_probes(None, _python_submission(tmp_path, "l1_gap_free", "l1_gap_fork"), "l1_gap_free", "l1_gap_fork")
    assert left_out.value.student == SAID


def test_an_item_graded_on_the_rest_passes_and_says_what_was_not_graded(tmp_path: Path) -> None:
    from oracle.grading.grader import Outcome

    outcome = with_probes(Outcome(True), _python_submission(tmp_path, "l2_hole_free"), "l2_hole_free")
    assert outcome.passed and outcome.excuse is None and outcome.message == SAID
    assert outcome.student == f"Passed what was graded. {SAID}"


def test_an_item_stopped_by_another_items_bug_stays_not_run_when_its_probes_are_not_graded(tmp_path: Path) -> None:
    """l1_traversal's programs stop at llm_init's bug; its probes, not graded for Python, do not turn that into
    not applicable (which would hide the stop from the score)."""
    report = grade("tests.broken.probe_bugs:init_returns_null", load(small_rubric(tmp_path / "r.toml", ["l1_traversal"])),
                   tmp_path, timeout=1.0)
    (item,) = report.items
    assert (item.status, item.max_points) == ("not_run", 4), item.message


def test_gradescope_and_the_terminal_say_what_was_not_graded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rubric = small_rubric(tmp_path / "r.toml", ["llm_init", "l1_traversal"])
    results, report = tmp_path / "results.json", tmp_path / "report.json"
    assert main(["grade", "engine", "--rubric", str(rubric), "--out", str(tmp_path / "out"), "--gradescope",
                 str(results), "--json", str(report)]) == 0
    tests = {t["name"]: t for t in json.loads(results.read_text())["tests"]}
    walks = tests["free_sequence and fork_sequence visit all 16 L1 slots"]
    assert (walks["score"], walks["max_score"], walks["status"]) == (4, 4, "passed") and SAID in walks["output"]
    assert tests["Task 1: llm_init"]["output"] == ""
    assert capsys.readouterr().out.count("Not graded for a Python submission") == 1
    (item,) = [i for i in json.loads(report.read_text())["items"] if i["id"] == "l1_traversal"]
    assert SAID in item["student"]
