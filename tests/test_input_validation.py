"""Bad input never reaches grading: rubric points and item options are checked when the rubric is loaded,
`--timeout` and `--time-limit` must be finite and > 0, and grade-all never grades an entry that leaves its
folder. Each case is one line and exit 2, or a row saying so; never a traceback."""

import csv
import json
import os
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.batch import RESERVED, find_submissions, folder_names
from oracle.grading.rubric import RubricError, at_least, positive
from oracle.hw3.grade import load
from tests.test_grade import REFERENCE, small_rubric


def _one_line(capsys: pytest.CaptureFixture[str], words: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err and "usage:" not in err, err
    return err


@pytest.mark.parametrize("points", ["nan", "inf", "-inf", "-0.5"])
def test_rubric_points_must_be_finite_and_not_negative(points: str, tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(f'[[item]]\nid = "fork"\npoints = {points}\n')
    with pytest.raises(RubricError, match=r"item 1 \('fork'\): points must be a number >= 0 and finite, got"):
        load(path)


def test_rubric_points_that_add_up_past_a_float_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[[item]]\nid = "fork"\npoints = 1e308\n[[item]]\nid = "create_free"\npoints = 1e308\n')
    with pytest.raises(RubricError, match="the points add up to more than a float holds"):
        load(path)


@pytest.mark.parametrize("item, option, value, words", [
    ("fuzz", "examples", "-5", "option 'examples' must be >= 1, got -5"),
    ("fuzz", "steps", "0", "option 'steps' must be >= 1, got 0"),
    ("fuzz", "seconds", "nan", "option 'seconds' must be finite, got nan"),
    ("fuzz", "seconds", "inf", "option 'seconds' must be finite, got inf"),
    ("fuzz", "seconds", "0", "option 'seconds' must be a finite number > 0, got 0"),
    ("fuzz", "shrink_replays", "-1", "option 'shrink_replays' must be >= 0, got -1"),
    ("memory_safety", "timeout", "-inf", "option 'timeout' must be finite, got -inf"),
    ("memory_safety", "timeout", "0.0", "option 'timeout' must be a finite number > 0, got 0.0"),
])
def test_item_options_are_checked_when_the_rubric_is_loaded(item: str, option: str, value: str, words: str,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(f'[[item]]\nid = "{item}"\npoints = 1\n[item.options]\n{option} = {value}\n')
    with pytest.raises(RubricError) as error:
        load(path)
    assert f"item 1 ('{item}'): {words}" in str(error.value)


def test_the_option_rules_accept_their_bounds() -> None:
    assert at_least(1)(1) is None and at_least(1)(0) == "must be >= 1"
    assert positive(0.001) is None and positive(float("inf")) and positive(-1)


def test_a_rubric_with_a_bad_option_is_one_line_and_exit_2_before_grading(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[[item]]\nid = "fuzz"\npoints = 1\n[item.options]\nexamples = -5\n')
    report = tmp_path / "report.json"
    assert main(["grade", "engine", "--rubric", str(path), "--json", str(report), "-q"]) == 2
    _one_line(capsys, "option 'examples' must be >= 1, got -5")
    assert json.loads(report.read_text())["items"] == []
    assert main(["grade-all", str(tmp_path), "--rubric", str(path), "-q"]) == 2
    _one_line(capsys, "option 'examples' must be >= 1")


@pytest.mark.parametrize("option", ["--timeout", "--time-limit"])
@pytest.mark.parametrize("value, words", [("inf", "expected a finite number of seconds, got 'inf'"),
                                          ("nan", "expected seconds > 0, got nan"),
                                          ("-inf", "expected seconds > 0, got -inf"),
                                          ("1e400", "expected a finite number of seconds, got '1e400'")])
def test_a_timeout_that_is_not_finite_and_positive_is_one_line_and_exit_2(option, value, words, capsys) -> None:
    for command in (["grade", "engine"], ["grade-all", "."]):
        with pytest.raises(SystemExit) as exited:
            main([*command, f"{option}={value}"])
        assert exited.value.code == 2
        err = _one_line(capsys, words)
        assert err.startswith(f"pagedcheck {command[0]}: error: argument {option}: ")


def _class_with_links(tmp_path: Path) -> Path:
    """alice (a real folder), and entries that leave the folder: a link to /, a link to alice, a link to a
    folder outside holding a real submission, a dangling link; plus a plain file and a hidden folder."""
    batch, outside = tmp_path / "class", tmp_path / "outside"
    for folder in (batch / "alice", outside / "mallory", batch / ".hidden"):
        folder.mkdir(parents=True)
        (folder / "llm_memory.c").write_bytes((REFERENCE / "llm_memory.c").read_bytes())
    os.symlink("/", batch / "root")
    os.symlink("alice", batch / "alias")
    os.symlink(outside / "mallory", batch / "mallory")
    os.symlink(tmp_path / "nowhere", batch / "dangling")
    (batch / "notes.txt").write_text("not a submission\n")
    return batch


def test_find_submissions_grades_real_folders_only_and_skips_every_link(tmp_path: Path) -> None:
    batch = _class_with_links(tmp_path)
    folders, skipped = find_submissions(batch)
    assert folders == [batch.resolve() / "alice"]
    assert [(row.name, row.status, row.folder) for row in skipped] == [
        ("alias", "skipped", ""), ("dangling", "skipped", ""), ("mallory", "skipped", ""), ("root", "skipped", "")]
    assert "skipped: a symbolic link (to '/'), not a folder inside" in skipped[3].error


def test_grade_all_writes_a_row_for_each_link_and_grades_no_folder_under_another_name(tmp_path: Path, capsys) -> None:
    batch = _class_with_links(tmp_path)
    rubric = small_rubric(tmp_path / "r.toml", ["compiles"])
    assert main(["grade-all", str(batch), "--rubric", str(rubric)]) == 2  # skipped entries were not graded
    out = tmp_path / "class-grades"
    rows = {row["submission"]: row for row in csv.DictReader((out / "scores.csv").open())}
    assert {name: row["status"] for name, row in rows.items()} == {
        "alice": "passed", "alias": "skipped", "dangling": "skipped", "mallory": "skipped", "root": "skipped"}
    assert rows["alice"]["folder"] == "alice" and all(rows[n]["folder"] == "" for n in rows if n != "alice")
    assert sorted(p.name for p in out.iterdir()) == ["alice", "scores.csv"]  # nothing at the top, no "" row
    err = capsys.readouterr().err
    assert "grade-all: [5/5]" in err and "root: skipped, skipped: a symbolic link (to '/')" in err


def test_a_folder_only_of_links_is_a_batch_of_skipped_rows(tmp_path: Path) -> None:
    batch = tmp_path / "class"
    batch.mkdir()
    os.symlink("/", batch / "root")
    assert main(["grade-all", str(batch), "-q"]) == 2
    (row,) = csv.DictReader((tmp_path / "class-grades" / "scores.csv").open())
    assert (row["submission"], row["status"]) == ("root", "skipped")


def test_reports_inside_the_graded_folder_are_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "class" / "alice").mkdir(parents=True)
    assert main(["grade-all", str(tmp_path / "class"), "--out", str(tmp_path / "class" / "grades")]) == 2
    _one_line(capsys, "would mix reports with submissions")


def test_every_row_gets_a_folder_of_its_own_even_when_named_like_the_scores_file(tmp_path: Path) -> None:
    names = ["alice", "scores.csv", "scores.csv-1"]
    folders = folder_names(names)
    assert folders == {"alice": "alice", "scores.csv": "scores.csv-2", "scores.csv-1": "scores.csv-1"}
    assert len(set(folders.values())) == 3 and not RESERVED & set(folders.values())
    batch = tmp_path / "class"
    (batch / "scores.csv").mkdir(parents=True)
    rubric = small_rubric(tmp_path / "r.toml", ["compiles"])
    assert main(["grade-all", str(batch), "--rubric", str(rubric), "-q"]) == 1  # no llm_memory.c: graded 0
    out = tmp_path / "class-grades"
    (row,) = csv.DictReader((out / "scores.csv").open())
    assert (row["submission"], row["folder"]) == ("scores.csv", "scores.csv-1")
    assert (out / "scores.csv").is_file() and (out / "scores.csv-1" / "report.json").is_file()
