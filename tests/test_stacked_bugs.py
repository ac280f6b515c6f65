"""A bug cannot buy points by hiding another (tests/submissions/stacked/, from an adversarial review): a
submission with a second bug planted where it stops the programs that would show the first scores no more
than the first bug alone; two real bugs score no more than either alone. Each such stop is an item's excuse,
and an excuse holds only when the item it names fails (oracle/grading/grader.py)."""

from pathlib import Path
from typing import Callable

from oracle.hw3.grade import grade, load
from tests.test_grade import small_rubric


def score(name: str, tmp_path: Path, submission: Callable[..., Path]) -> float:
    out = tmp_path / name
    out.mkdir()
    report = grade(str(submission("stacked", name)), load(small_rubric(out / "rubric.toml")), out, timeout=1.0)
    return report.score


def test_a_create_bug_planted_in_the_probes_set_up_does_not_hide_the_l1_gap_bug(
        tmp_path: Path, submission: Callable[..., Path]) -> None:
    honest = score("gap_stops_free_and_fork", tmp_path, submission)
    assert honest < 100
    assert score("gap_bug_hidden_by_a_planted_create_bug", tmp_path, submission) <= honest


def test_a_free_count_skewed_when_full_does_not_hide_the_out_of_memory_bugs(
        tmp_path: Path, submission: Callable[..., Path]) -> None:
    skewed = score("free_count_skewed_when_full", tmp_path, submission)
    oom = score("oom_checked_after_allocating", tmp_path, submission)
    assert max(skewed, oom) < 100
    assert score("oom_bug_hidden_by_a_skewed_free_count", tmp_path, submission) <= min(skewed, oom)
