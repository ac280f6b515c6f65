"""Tamper suite, the seventh adversarial review's attacks (issue 17, round 7), where the grader is not root: each run
is then the grader's own uid (tests/as_nobody.py grades as uid 65534), and may set what a file of that uid keeps, or
read what a process of that uid shows. As root each run is a uid of its own: the same attacks are graded as root too,
where they hold. Shape, table and helpers: tests/test_tamper_review7.py."""

import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.as_nobody import NOBODY, graded_as_nobody, nobody_cannot_grade
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import Reaper, Scene
from tests.tamper_grading import check_report, max_points, python_module, reaper, scene, weighted  # noqa: F401
from tests.test_tamper_review7 import (C_ATTACKS, FORK_HONEST, FORK_ITEMS, FORK_MAX, PY_ATTACKS, _c_problems,
                                       _python_problems)


# --- 7. what a process finds of the one before it: its standard output's extended attributes ------------------------
# tests/hostile_review7/fork_told_by_output.py on fork_no_incref: every process of a grading writes what it prints to
# one file of the grader's (oracle/child.py's output: truncated when a process starts, never replaced), its standard
# output. Each process keeps its calls so far in an extended attribute of that file (user.review7), which truncating
# leaves, and reads at import what the process before it left. A process whose calls, a fork included, are a strict
# prefix of the calls before it is replaying a program that went on past there: a second opinion (the fork witness's
# references), where the fork takes its references. As root (every run a uid of its own, which may not set an
# attribute of the grader's file: measured, EACCES) it holds: 8/16, under bubblewrap and without. Where the grader is
# not root (the runs are its own uid: a course's own machine), it breaks: 14/16 for the honest 8/16, measured under
# bubblewrap and in the Landlock fallback (the control, fork_no_incref alone, 8/16 both ways):
#     setpriv --reuid=65534 --regid=65534 --clear-groups env PYTHONPATH=<venv site-packages>:<repo> /usr/bin/python3 \
#         -c 'from oracle.cli import main; ...' grade r7_attack --rubric rubric.toml --json out.json -q
# what broke before the fix (a fresh output file a process, no metadata a run may set): kept as the record
OUTPUT_BROKEN = (
    "every process of a Python submission writes its output to one file of the grader's (oracle/child.py's, "
    "truncated when a process starts), whose extended attributes and mode a process of the grader's own uid may set "
    "and the next process read: a channel from each process to the next, so a second opinion knows itself one "
    "(its calls a strict prefix of the calls before it). Fix by construction: a fresh output file for every process "
    "(made when it starts, as its pools' file is: pyremote._fresh_pools), or output through a pipe the grader drains; "
    "nothing of a process's descriptors then outlives it")


def test_a_second_opinion_cannot_be_told_by_the_output_file_as_root(scene: Scene, reaper: Reaper) -> None:
    """Held where the grader is root: each run is a uid of its own, and may not set an attribute of the grader's
    output file, so every process finds nothing left and forks as fork_no_incref: 8/16."""
    if os.geteuid() != 0:
        pytest.skip("the grader is not root here: test_..._as_the_graders_uid is this case")
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_told_by_output", FORK_ITEMS, "append_cow",
                                FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_told_by_output as root (honest {FORK_HONEST}/{FORK_MAX}):", *problems])


@pytest.mark.skipif(nobody_cannot_grade() is not None, reason=str(nobody_cannot_grade()))
@pytest.mark.parametrize("attack", ["", "fork_told_by_output"], ids=["control", "attack"])
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_second_opinion_cannot_be_told_by_the_output_file_as_the_graders_uid(attack: str,
                                                                              without_bwrap: bool) -> None:
    # held since every process writes to an output file of its own and no run may set an attribute or a mode
    # (oracle/seccomp.py): OUTPUT_BROKEN says what broke before
    from tests.test_grade import small_rubric

    folder = Path(tempfile.mkdtemp(prefix="review7-", dir="/tmp"))  # pytest's folders are root's alone (0700)
    try:
        folder.chmod(0o755)
        module = f"review7_{attack or 'control'}"
        code = (PY_ATTACKS / f"{attack}.py").read_text() if attack else ""
        (folder / f"{module}.py").write_text(python_module("fork_no_incref", code))
        weighted(small_rubric(folder / "rubric.toml", list(FORK_ITEMS)), "append_cow", 2)
        graded_as_nobody(folder, module, without_bwrap)
        problems = check_report(folder / "out", FORK_HONEST, FORK_MAX)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert not problems, "\n".join([f"{module} graded as uid {NOBODY} (honest {FORK_HONEST}/{FORK_MAX}):", *problems])




# tests/submissions/hostile/review7/floor_told_by_output.patch on broken/create_floor_blocks.patch (a create maps
# floor(records / 16) blocks), with the control floor_at_least_one.patch (the same, at least one block): the same
# channel for C, every driver process of an adapter writing to one output file (driver_process.py), aimed at the
# second opinion on a block left unmapped (fresh_pool.search_failed: the call's count, create_free's, or its search,
# first_fit's). Its first witness is told by its pool, FRESH_BLOCKS (4096) blocks, a size no directed program uses;
# its third (the program replayed to the call, then one-record creates that must map as many blocks as the call took)
# by the calls an earlier process left in the output file's attribute. Graded on compiles (5), create_free (10),
# first_fit (5) and free_count (5): the count bug's honest grade is 15/25 (create_free fails at its first
# create of 17 records). As root it holds (15/25, the attribute refused). As uid NOBODY the witness is steered, and
# the count bug's step is charged to first_fit; the same bug then shows in create_free's returns anyway: 10/25, a bug
# costing two items (measured under bubblewrap and in the Landlock fallback).
FLOOR_ITEMS = ("compiles", "create_free", "first_fit", "free_count")
FLOOR_HONEST = 15
# what broke before the same fix, kept as the record
STEERED_BROKEN = (
    OUTPUT_BROKEN + "; the same for a C driver's output file (driver_process.py), and "
    "fresh_pool.maps_on_a_fresh_pool's "
    "pool of FRESH_BLOCKS (4096) blocks is a size no directed program uses, which a count bug can read as its cue "
    "(fix: a size derived from the program, as witness_pool's)")


@pytest.mark.parametrize("attack", ["floor_at_least_one", "floor_told_by_output"])
def test_a_count_bugs_second_opinion_is_not_steered_as_root(attack: str, scene: Scene, reaper: Reaper) -> None:
    if os.geteuid() != 0:
        pytest.skip("the grader is not root here: test_..._as_the_graders_uid is this case")
    problems = _c_problems(scene, reaper, "create_floor_blocks", attack, FLOOR_ITEMS, FLOOR_HONEST)
    assert not problems, "\n".join([f"{attack} (honest score {FLOOR_HONEST}/{max_points(FLOOR_ITEMS)}):", *problems])


@pytest.mark.skipif(nobody_cannot_grade() is not None, reason=str(nobody_cannot_grade()))
@pytest.mark.parametrize("attack", ["floor_at_least_one", "floor_told_by_output"])
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_count_bugs_second_opinion_is_not_steered_as_the_graders_uid(attack: str, without_bwrap: bool) -> None:
    # held since every driver process writes to an output file of its own and no run may set an attribute or a
    # mode (oracle/seccomp.py): STEERED_BROKEN says what broke before
    from tests.test_grade import small_rubric

    folder = Path(tempfile.mkdtemp(prefix="review7-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        sub = folder / "submission"
        sub.mkdir()
        source = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "create_floor_blocks.patch")
        (sub / "llm_memory.c").write_text(patched(source, C_ATTACKS / f"{attack}.patch"))
        small_rubric(folder / "rubric.toml", list(FLOOR_ITEMS))
        graded_as_nobody(folder, str(sub), without_bwrap)
        problems = check_report(folder / "out", FLOOR_HONEST, max_points(FLOOR_ITEMS))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert not problems, "\n".join([f"{attack} graded as uid {NOBODY} (honest {FLOOR_HONEST}/25):", *problems])

# tests/hostile_review7/grader_environ.py on fork_no_incref, graded as uid NOBODY: every process above the
# submission's has its environment read (/proc/PID/environ, which a process of the same uid may read where no Yama
# forbids it, as here) and what was read put into a failing call's message, which the report shows. Held: under
# bubblewrap the processes above it are the run's own shells (a pid namespace), and in the Landlock fallback Landlock
# keeps a sandboxed process from the ptrace access /proc/PID/environ and /proc/PID/mem need of any process outside its
# domain, the grader's ("Permission denied", measured): the grader's secret is in no report.
@pytest.mark.skipif(nobody_cannot_grade() is not None, reason=str(nobody_cannot_grade()))
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_run_of_the_graders_uid_cannot_read_the_graders_environment(without_bwrap: bool) -> None:
    from tests.test_grade import small_rubric

    folder = Path(tempfile.mkdtemp(prefix="review7-", dir="/tmp"))
    secret = f"review7-secret-{secrets.token_hex(8)}"
    try:
        folder.chmod(0o755)
        attack = (PY_ATTACKS / "grader_environ.py").read_text()
        (folder / "review7_environ.py").write_text(python_module("fork_no_incref", attack))
        small_rubric(folder / "rubric.toml", ["llm_init", "create_free"])
        done = graded_as_nobody(folder, "review7_environ", without_bwrap, {"PAGEDCHECK_REVIEW7_SECRET": secret})
        shown = [path.name for path in (folder / "out").rglob("*")
                 if path.is_file() and secret in path.read_text(errors="replace")]
        report = (folder / "out" / "report.json").read_text()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert "read:" in report, f"the attack did not run: {done.stderr[-300:]}"
    assert not shown and secret not in done.stdout + done.stderr, f"the grader's secret reached {shown}"
