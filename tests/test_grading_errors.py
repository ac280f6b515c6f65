"""Grading when things go wrong: a check that breaks (the grader's fault), Gradescope output for a report with
a grader error or a huge message, batch rows for a grader that hangs or writes no report, rubric mistakes."""

import json
import sys

import pytest

from oracle.grading import gradescope
from oracle.grading.batch import exit_status, grade_all
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.rubric import Rubric, RubricError, RubricItem
from oracle.hw3.grade import grade, load


def test_a_check_that_breaks_is_an_error_item_and_exit_2(tmp_path):
    """A rubric built in code (not loaded) can give a check options it cannot use: the check raises."""
    rubric = Rubric("t", (RubricItem("fuzz", "Fuzz", 4, "visible", {"seed": 1}),), "code")
    report = grade("engine", rubric, tmp_path)
    (item,) = report.items
    assert item.status == "error" and item.points == 0 and item.max_points == 4
    assert item.message.startswith("grader error: KeyError: ") and "Traceback" in item.details
    assert report.exit_status == 2
    test = gradescope.results(report)["tests"][0]
    assert test["status"] == "failed" and test["score"] == 0 and "grader error: KeyError" in test["output"]


def _item(**kw) -> ItemResult:
    return ItemResult(**{"id": "fork", "name": "Fork", "rule": "Task 3", "status": "failed", "points": 0,
                         "max_points": 3, "visibility": "hidden", **kw})


def test_gradescope_results_say_when_the_grader_could_not_run():
    report = GradeReport("hw3", "alice", "c", "HW3", "rubric.toml", 110, [_item()], grader_error="gcc vanished")
    data = gradescope.results(report)
    assert data["output"].startswith("Score 0/3 (pagedcheck, seed 110).")
    assert "The grader could not run: gcc vanished\nPlease tell the course staff." in data["output"]
    assert data["tests"][0]["visibility"] == "hidden"


def test_gradescope_output_of_one_item_is_capped():
    report = GradeReport("hw3", "alice", "c", "HW3", "rubric.toml", 1, [_item(details="x" * 50_000, repro="repro.c")])
    output = gradescope.results(report)["tests"][0]["output"]
    assert output.endswith("\n\n... (cut here: too long to show)") and 39_000 < len(output) < 40_200
    assert output.startswith("*Rule: Task 3") and output.count("```") % 2 == 0  # no code block left open


def test_gradescope_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    gradescope.write(tmp_path / "results.json", gradescope.failure_results("bad rubric"))
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert json.loads((tmp_path / "results.json").read_text())["score"] == 0


def _python(code: str):
    return lambda submission, out: [sys.executable, "-c", code]


def test_batch_row_of_a_grader_that_outlives_its_time_limit(tmp_path):
    (tmp_path / "alice").mkdir()
    rows = grade_all([tmp_path / "alice"], tmp_path / "out", _python("import time; time.sleep(60)"), ["fork"],
                     timeout=0.5, progress=None)
    (row,) = rows
    assert (row.status, row.score, row.error) == ("grader error", 0, "grading took longer than 0.5 s")
    assert exit_status(rows) == 2


def test_batch_row_of_a_grader_that_writes_no_report(tmp_path):
    import io

    (tmp_path / "bob").mkdir()
    progress = io.StringIO()
    rows = grade_all([tmp_path / "bob"], tmp_path / "out", _python("print('first'); print('boom: no gcc')"), ["fork"],
                     progress=progress)
    (row,) = rows
    assert row.status == "grader error" and row.error == "no report (exit 0): boom: no gcc"
    assert "bob: grader error, no report (exit 0): boom: no gcc" in progress.getvalue()
    lines = (tmp_path / "out" / "scores.csv").read_text().splitlines()
    assert lines == ["submission,score,max_score,status,fork,error,folder,isolation",
                     "bob,0,0,grader error,,no report (exit 0): boom: no gcc,bob,"]


def test_batch_row_of_a_silent_grader_that_writes_no_report(tmp_path):
    (tmp_path / "carol").mkdir()
    (row,) = grade_all([tmp_path / "carol"], tmp_path / "out", _python("raise SystemExit(3)"), [], progress=None)
    assert row.error == "no report (exit 3): no output"


def test_exit_status_of_an_empty_batch_is_0():
    assert exit_status([]) == 0


@pytest.mark.parametrize("text, words", [
    ("title = 3\n[[item]]\nid = \"fork\"\npoints = 1\n", "title must be a string"),
    ("[[item]]\nid = 3\npoints = 1\n", "item 1: id must be a string naming a check"),
    ("[[item]]\nid = \"fork\"\npoints = 1\nname = 2\n", "item 1 ('fork'): name must be a string"),
    ("[[item]]\nid = \"fork\"\npoints = 1\noptions = 2\n", "item 1 ('fork'): options must be a table"),
    ("[[item]]\nid = \"fuzz\"\npoints = 1\n[item.options]\nseconds = true\n", "option 'seconds' must be float, got True"),
    ("item = 3\n", "no [[item]] tables"),
    ("gradescope = 3\n[[item]]\nid = \"fork\"\npoints = 1\n", "gradescope must be a table ([gradescope])"),
    ("[gradescope]\nshow = \"visible\"\n[[item]]\nid = \"fork\"\npoints = 1\n",
     "[gradescope]: unknown key(s) show; expected test_visibility, visibility"),
    ("[gradescope]\nvisibility = \"public\"\n[[item]]\nid = \"fork\"\npoints = 1\n",
     "[gradescope]: visibility must be one of hidden, after_due_date, after_published, visible, got 'public'"),
    ("[gradescope]\ntest_visibility = 1\n[[item]]\nid = \"fork\"\npoints = 1\n",
     "[gradescope]: test_visibility must be one of"),
])
def test_more_rubric_mistakes_are_named(text, words, tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(text)
    with pytest.raises(RubricError) as error:
        load(path)
    assert words in str(error.value)


def test_a_missing_or_undecodable_rubric_is_named(tmp_path):
    with pytest.raises(RubricError, match=r"r\.toml: cannot read it: No such file"):
        load(tmp_path / "r.toml")
    (tmp_path / "r.toml").write_bytes(b"title = '\xff'\n")
    with pytest.raises(RubricError, match="not valid TOML"):
        load(tmp_path / "r.toml")


def test_a_float_option_takes_an_int_and_a_bool_option_only_a_bool():
    from oracle.grading.rubric import _fits

    assert _fits(2, 8.0) and not _fits(True, 8.0) and _fits(False, True) and not _fits(1, True) and not _fits("x", 3)


def test_the_rubrics_gradescope_table_sets_the_result_and_default_item_visibility(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[gradescope]\nvisibility = "after_published"\ntest_visibility = "hidden"\n'
                    '[[item]]\nid = "fork"\npoints = 1\n[[item]]\nid = "free_count"\npoints = 1\nvisibility = "visible"\n')
    rubric = load(path)
    assert rubric.visibility == "after_published"
    assert [item.visibility for item in rubric.items] == ["hidden", "visible"]  # an item's own wins
    path.write_text('[[item]]\nid = "fork"\npoints = 1\n')
    assert load(path).visibility is None and load(path).items[0].visibility == "visible"  # Gradescope's defaults
