"""Tamper suite for oracle/hw3/alone.py (issue 17): a second opinion must not be able to tell itself from the graded
run's first process. No two processes of one submission are alive at once (tests/test_tamper_review5.py's
witness_not_alone and refusal_not_alone hold), and a run leaves no file, System V or POSIX queue, key or socket
behind (oracle/seccomp.py, tests/test_sandbox.py); what is left is a mark that outlives its process in what
every run may read. Same shape as test_tamper_review5.py: graded by a separate `pagedcheck` process in a world of its
own, with and without bubblewrap (the honest score, no process left, no file changed outside the scratch)."""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_submission, graded_problems, python_module, reaper  # noqa: F401  (fixture)
from tests.test_tamper_review5 import ALONE_HONEST, ALONE_ITEMS, ALONE_MAX

ATTACKS = Path(__file__).with_name("hostile_alone")
C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "alone"

# tests/hostile_alone/witness_by_atime.py on fork_no_incref: graded as witness_not_alone (llm_init 6, fork 8,
# append_cow weighed 2: honest 8/16). It marks each fork's prefix of calls in a file's access time (a stdlib source,
# or a copyright file of /usr/share/doc). Under bubblewrap /usr is a read-only mount (no atime is written); under
# the Landlock fallback a Python run reads only a private copy of the system Python whose atimes lie in the future,
# which relatime never updates (oracle/runtime.py). Measured with that copy left out (the host's /usr readable):
# 6/16, the in-place append of append_cow's program left to append_cow while fork still fails on its own.


@pytest.mark.parametrize("without_bwrap", [
    pytest.param(False, id="bwrap"),
    pytest.param(True, id="without-bwrap")])
def test_a_witness_cannot_tell_itself_by_a_mark_an_earlier_process_left(without_bwrap: bool, tmp_path: Path,
                                                                       reaper: Reaper) -> None:
    scene = Scene(tmp_path, without_bwrap=without_bwrap)
    try:
        code = python_module("fork_no_incref", (ATTACKS / "witness_by_atime.py").read_text())
        (scene.mods / "alone_witness_by_atime.py").write_text(scene.fill(code))
        problems = graded_problems(scene, reaper, Path("alone_witness_by_atime"), ALONE_ITEMS, ALONE_HONEST, ALONE_MAX,
                                   {"append_cow": 2})
    finally:
        scene.close()
    assert not problems, "\n".join([f"witness_by_atime (honest score {ALONE_HONEST}/{ALONE_MAX}):", *problems])


# tests/submissions/hostile/alone/witness_by_atime.patch: the same attack in C, on fork_no_incref.patch's bug (the
# fork takes no reference of the shared blocks unless its engine state was forked before in this grading), marking
# a copyright file of /usr/share/doc by reading it. Under the Landlock fallback a C driver reads only the frozen
# runtime copy since c-runtime (oracle/SANDBOX.md, "Access times"): the open is refused and no mark is made. Before
# that the mark was made, and the attack still gained nothing: a C fork is judged at the fork from the engine's own memory (its ref_count), never by a second opinion
# (oracle/hw3/fork_witness.py is for engines whose objects the grader does not read), so the attack gains nothing:
# honest 8/16 (fork fails; append_cow's in-place append is the fork's). Without bubblewrap only: under it the
# attack finds no grader in its pid namespace and is the plain bug.
def test_a_c_fork_without_references_gains_nothing_by_marking_access_times(tmp_path: Path, reaper: Reaper) -> None:
    scene = Scene(tmp_path, without_bwrap=True)
    try:
        sub = c_submission(scene, None, C_ATTACKS / "witness_by_atime.patch")
        problems = graded_problems(scene, reaper, sub, ALONE_ITEMS, ALONE_HONEST, ALONE_MAX, {"append_cow": 2})
    finally:
        scene.close()
    assert not problems, "\n".join([f"C witness_by_atime (honest score {ALONE_HONEST}/{ALONE_MAX}):", *problems])
