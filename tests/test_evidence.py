"""What a verdict rests on (oracle/hw3/evidence.py): a probe resting on an edit of the submission's objects is
not graded for a Python submission (no point, no cost, out of the maximum), said once in a student's words in
every output; C is graded as before."""

import json
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.grader import NotApplicable
from oracle.hw3.evidence import EDIT, ITEMS, POOL, RETURNS, STATE, WORDS, item_not_graded, not_graded
from oracle.hw3.grade import grade, load
from oracle.hw3.probes import RESTS_ON, not_graded_result
from oracle.hw3.verdicts import Submission, with_probes
from tests.conftest import broken_python
from tests.test_grade import small_rubric

SAID = f"Not graded for a Python submission: {WORDS[EDIT]}."
STATE_SAID = f"Not graded for a Python submission: {WORDS[STATE]}."


def test_for_python_only_returns_and_the_pool_are_evidence_and_c_is_graded_on_all() -> None:
    assert not_graded("python", frozenset({RETURNS, STATE, EDIT})) == SAID  # an edit's words first
    assert not_graded("python", frozenset({RETURNS, STATE, POOL})) == STATE_SAID
    assert not_graded("python", frozenset({RETURNS, POOL})) is None
    assert not_graded("c", frozenset({RETURNS, STATE, POOL, EDIT})) is None
    assert {name for name, rests_on in RESTS_ON.items() if EDIT in rests_on} == {
        "l1_gap_free", "l1_gap_fork", "l2_hole_free", "l2_hole_fork", "big_pool"}


def test_an_item_is_left_out_only_when_all_its_programs_rest_on_is_left_out() -> None:
    assert item_not_graded("python", "tail_insertion") == STATE_SAID
    assert item_not_graded("python", "free_count") is None  # a refusal that more free blocks undo shows it
    assert item_not_graded("python", "first_fit") is None  # a record in the wrong block shows in the pool
    assert item_not_graded("python", "no_premature_writes") is None
    assert item_not_graded("c", "free_count") is None and item_not_graded("c", "tail_insertion") is None
    assert item_not_graded("python", "compiles") is None  # no programs declared: the check decides for itself
    assert {item for item in ITEMS if item_not_graded("python", item)} == {"tail_insertion", "l1_traversal"}
    assert not {item for item in ITEMS if item_not_graded("c", item)}


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
    """create_free's programs stop at llm_init's bug; its probes, not graded for Python, do not turn that into
    not applicable (which would hide the stop from the score)."""
    report = grade(broken_python("init_returns_null"), load(small_rubric(tmp_path / "r.toml", ["create_free"])),
                   tmp_path, timeout=1.0)
    (item,) = report.items
    assert (item.status, item.max_points) == ("not_run", 10), item.message


def test_an_item_whose_rule_shows_only_in_the_objects_is_not_applicable_for_python_only(tmp_path: Path) -> None:
    """tail_insertion's rule (the list's order) shows in no return value and no pool byte: left out of a Python
    submission's score with the student's words, graded for C (create_at_head's bug fails it there)."""
    rubric = load(small_rubric(tmp_path / "r.toml", ["tail_insertion"]))
    (item,) = grade(broken_python("create_at_head"), rubric, tmp_path / "py", timeout=1.0).items
    assert (item.status, item.max_points) == ("not_applicable", 0) and STATE_SAID in item.student, item


def test_gradescope_and_the_terminal_say_what_was_not_graded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rubric = small_rubric(tmp_path / "r.toml", ["null_engine", "llm_init", "l1_traversal"])
    results, report = tmp_path / "results.json", tmp_path / "report.json"
    assert main(["grade", "engine", "--rubric", str(rubric), "--out", str(tmp_path / "out"), "--gradescope",
                 str(results), "--json", str(report)]) == 0
    tests = {t["name"]: t for t in json.loads(results.read_text())["tests"]}
    walks = tests["free_sequence and fork_sequence visit all 16 L1 slots"]
    assert (walks["score"], walks["max_score"]) == (0, 0) and STATE_SAID in walks["output"]  # its programs: left out
    init = tests["Task 1: llm_init"]  # its programs graded, its probe (init_untouched reads the counters) not
    assert (init["score"], init["max_score"], init["status"]) == (6, 6, "passed") and STATE_SAID in init["output"]
    assert tests["Constraint 1: NULL engine on every API"]["output"] == ""
    assert capsys.readouterr().out.count("Not graded for a Python submission") == 2  # once for each of the two
    (item,) = [i for i in json.loads(report.read_text())["items"] if i["id"] == "l1_traversal"]
    assert STATE_SAID in item["student"]
