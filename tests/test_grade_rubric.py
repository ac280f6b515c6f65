"""Rubric files: the shipped default is valid and mirrors the spec; every mistake is one clear error."""

from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.rubric import RubricError
from oracle.hw3.checks import CHECKS
from oracle.hw3.grade import load


def test_the_default_rubric_names_every_check_once_for_100_points() -> None:
    rubric = load()
    assert [item.id for item in rubric.items] == list(CHECKS)
    assert rubric.max_score == 100
    assert next(i for i in rubric.items if i.id == "alloc_failure").points == 0
    assert next(i for i in rubric.items if i.id == "fuzz").options["seed"] == 110


GOOD = '[[item]]\nid = "fork"\npoints = 3\n'


@pytest.mark.parametrize(
    "text, words",
    [
        ("title = [", "not valid TOML"),
        ('title = "x"\n', "no [[item]] tables"),
        ('[[item]]\nid = "nope"\npoints = 1\n', "no check named 'nope'; known checks: compiles"),
        (GOOD + GOOD, "check 'fork' appears twice"),
        ('[[item]]\nid = "fork"\npoints = -1\n', "points must be a number >= 0"),
        ('[[item]]\nid = "fork"\npoints = true\n', "points must be a number >= 0"),
        ('[[item]]\nid = "fork"\npoints = 1\nvisibility = "secret"\n', "visibility must be one of hidden"),
        ('[[item]]\nid = "fork"\npoints = 1\ncolour = 2\n', "unknown key(s) colour"),
        ('[[item]]\nid = "fork"\npoints = 1\n[item.options]\nseed = 1\n', "check 'fork' has no option 'seed'"),
        ('[[item]]\nid = "fuzz"\npoints = 1\n[item.options]\nseed = "x"\n', "option 'seed' must be int"),
        ('grading = 1\n' + GOOD, "unknown top-level key(s) grading"),
    ],
)
def test_rubric_mistakes_are_named(text: str, words: str, tmp_path: Path) -> None:
    path = tmp_path / "rubric.toml"
    path.write_text(text)
    with pytest.raises(RubricError, match="rubric .*rubric.toml: ") as error:
        load(path)
    assert words in str(error.value)


def test_a_course_rubric_sets_points_visibility_and_options(tmp_path: Path) -> None:
    path = tmp_path / "course.toml"
    path.write_text('title = "CS110"\n[[item]]\nid = "fuzz"\nname = "Fuzz"\npoints = 20.5\nvisibility = "hidden"\n'
                    '[item.options]\nseconds = 2\n')
    (item,) = load(path).items
    assert (item.name, item.points, item.visibility) == ("Fuzz", 20.5, "hidden")
    assert item.options["seconds"] == 2 and item.options["examples"] == 120  # the rest from the defaults


def test_a_bad_rubric_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rubric.toml"
    path.write_text('[[item]]\nid = "nope"\npoints = 1\n')
    assert main(["grade", "engine", "--rubric", str(path)]) == 2
    assert "no check named 'nope'" in capsys.readouterr().err
    assert main(["grade-all", str(tmp_path), "--rubric", str(path)]) == 2
