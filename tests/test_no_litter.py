"""No litter: a grade or a fuzz leaves no `.hypothesis/` in the folder it ran in (Hypothesis keeps its files
in the user's cache: oracle/hypothesis_home.py), a grade without --out leaves nothing in the temporary folder,
and every file a command writes is named on its output. Each command runs as a user runs it: a `pagedcheck`
process in a folder of its own, with its own TMPDIR and cache."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_grade import small_rubric

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A working folder, a cache folder, and a temporary folder of the command's own (traversable, as the
    sandbox's runs need, so the grade's sandbox folders go there too and can be counted)."""
    temp = Path(tempfile.mkdtemp(prefix="litter-tmp-", dir="/tmp"))
    temp.chmod(0o711)
    (tmp_path / "here").mkdir()
    try:
        yield {"here": tmp_path / "here", "cache": tmp_path / "cache", "tmp": temp}
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def pagedcheck(world: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HYPOTHESIS_STORAGE_DIRECTORY", "PYTHONPATH")}
    env.update(TMPDIR=str(world["tmp"]), XDG_CACHE_HOME=str(world["cache"]), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "oracle.cli", *args], cwd=world["here"], env=env,
                          capture_output=True, text=True, timeout=600)


def test_fuzz_leaves_no_hypothesis_folder_where_it_ran(world: dict[str, Path]) -> None:
    done = pagedcheck(world, "fuzz", "--examples", "20", "--steps", "10", "--seed", "3", "-q",
                      "--html", "page.html", "--json", "run.json")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in world["here"].iterdir()) == ["page.html", "run.json"]
    assert "wrote page.html (no failing step to picture)" in done.stdout and "wrote run.json" in done.stdout


def test_hypothesis_storage_is_the_users_choice_when_set(world: dict[str, Path], tmp_path: Path) -> None:
    env_dir = tmp_path / "mine"
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(env_dir)
    try:
        from oracle.hypothesis_home import keep_hypothesis_files_in_cache

        assert keep_hypothesis_files_in_cache() == env_dir
    finally:
        del os.environ["HYPOTHESIS_STORAGE_DIRECTORY"]
        from oracle.hypothesis_home import keep_hypothesis_files_in_cache

        keep_hypothesis_files_in_cache()


def test_a_grade_without_out_leaves_nothing_behind(world: dict[str, Path], submission: Callable[..., Path]) -> None:
    """A failing grade (its repro file and HTML page made) leaves the working folder and TMPDIR as they were."""
    rubric = small_rubric(world["here"].parent / "rubric.toml", ["tail_insertion", "fuzz"])
    done = pagedcheck(world, "grade", str(submission("broken", "tail_insertion")), "--rubric", str(rubric), "-q")
    assert done.returncode == 1, done.stderr
    assert "were not kept: add --out DIR" in done.stdout
    assert list(world["here"].iterdir()) == []  # no .hypothesis/, nothing else
    assert list(world["tmp"].iterdir()) == []  # no pagedcheck-* folder left


def test_a_grade_with_out_says_where_each_file_went(world: dict[str, Path], submission: Callable[..., Path]) -> None:
    rubric = small_rubric(world["here"].parent / "rubric.toml", ["tail_insertion"])
    done = pagedcheck(world, "grade", str(submission("broken", "tail_insertion")), "--rubric", str(rubric), "-q",
                      "--out", "feedback", "--json", "report.json", "--gradescope", "results.json")
    assert done.returncode == 1, done.stderr
    for line in ("wrote feedback/report.html (the failing steps, pictured)", "wrote report.json",
                 "wrote results.json", "Repro files are in feedback"):
        assert line in done.stdout
    assert sorted(p.name for p in world["here"].iterdir()) == ["feedback", "report.json", "results.json"]
    assert (world["here"] / "feedback" / "repro-tail_insertion.c").is_file()
    assert list(world["tmp"].iterdir()) == []
