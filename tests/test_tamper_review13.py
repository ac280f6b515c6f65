"""Tamper suite, the thirteenth adversarial review's attacks (issue 17, round 13): submissions written by a reviewer who
had not seen the designs being built, aimed at today's: the fallback's bounded temporary folder (one-view's
oracle/tmp_bound.py: the grader answers each open for writing from a count of what the run holds), seccomp's answers
to the page cache (oracle/seccomp.py), alloc_failure's shuffled tries and its try past each count
(oracle/hw3/alloc_failure.py), and the C machinery in oracle/native. The table of what each does and how it fared:
tests/hostile_review13/README.md.

Same shape as tests/test_tamper_review12.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. A correct submission written in an unusual way is graded under
bubblewrap and without it in one test: fairness asks the same full marks in both. An attack that breaks the grader is
a strict xfail naming the mechanism and a fix by construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import importlib.util
import json
import shutil
import tempfile

import pytest

from tests.as_nobody import NOBODY, graded_as_nobody, nobody_cannot_grade
from tests.tamper import ROOT, Reaper, Scene
from tests import tamper_grading
from tests.tamper_grading import c_submission, check_report, graded_problems, reaper, scene  # noqa: F401
from tests.test_blockspace_grade import student_copy
from tests.test_tamper_review3a import graded as blockspace_graded

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review13"
PY_ATTACKS = Path(__file__).with_name("hostile_review13")


def blockspace_submission(scene: Scene, base: str | None, attack: str) -> Path:
    """tamper_grading.blockspace_submission with tests/hostile_review13/<attack>.py."""
    return tamper_grading.blockspace_submission(scene, base, PY_ATTACKS / f"{attack}.py")


def in_both_isolations(tmp_path: Path, reaper: Reaper, attack: str, points: dict[str, int],
                       honest: int | None = None) -> list[str]:
    """tamper_grading.blockspace_in_both_isolations with tests/hostile_review13/<attack>.py."""
    return tamper_grading.blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / f"{attack}.py", points, honest)


# --- 1. many small files open at once in the temporary folder (one-view: oracle/tmp_bound.py, oracle/run_view.py) ---
# tests/hostile_review13/journal_per_sequence.py on the correct engine: the manager keeps a crash log per sequence, a
# TemporaryFile of a few bytes each, open for the manager's life. The fuzz's programs hold more than 16 sequences in one
# manager. Graded on block_table (10) and fuzz (25).
JOURNAL_POINTS = {"block_table": 10, "fuzz": 25}
JOURNAL_BROKEN = (
    "the two isolations bound the temporary folder by different rules: bubblewrap's is a tmpfs of 16 MiB (bytes: any "
    "number of small files fit), the fallback's (one-view: oracle/tmp_bound.py) counts every file a run holds open for "
    "writing at the run's file-size limit (the Python server's: its output limit, 1 MiB) whatever it holds, and refuses"
    " (EDQUOT) an open for writing once that count and one more such file would pass 16 MiB; so at most 16 files may"
    " be "
    "open for writing at once, a few bytes each or not: a correct module that keeps a small journal per sequence gets "
    "35/35 under bubblewrap and 0/35 without it (\"fuzz (4 of 150 programs, 83 calls, seed 1): can_allocate(group 16) "
    "and allocate it if OK: allocate raised OSError: [Errno 122] Disk quota exceeded\", measured with one-view's "
    "grader; on main, before one-view, 0/35 as well: the fallback's server has no temporary folder, review 12's "
    "log_in_tmp). Fix by construction: one rule for both isolations, the same declaration applied by each: either "
    "the fallback's count is of bytes the files hold (each open for writing counted at its size, and a write, "
    "ftruncate or fallocate that would take the folder past tmp_bytes refused: the same notification for those calls"
    " on a descriptor under the folder), or bubblewrap's runs get tmp_bound's very filter too (the same 16 open files "
    "in both, and the rule written in the course's documentation)")


# held since the Python server writes nowhere (oracle/run_view.py): the first journal fails to open the same way
# under both isolations, so the grade is the same in both, 0/35 (every graded run's first allocate raises); no
# count of open files decides it any more. JOURNAL_BROKEN is what it broke, kept as the record
def test_a_small_journal_per_sequence_grades_the_same_in_both_isolations(tmp_path: Path, reaper: Reaper) -> None:
    problems = in_both_isolations(tmp_path, reaper, "journal_per_sequence", JOURNAL_POINTS, honest=0)
    assert not problems, "\n".join(["journal_per_sequence (writes files: 0/35 in both isolations):", *problems])


# --- 2. a correct C submission that asks again for an allocation that failed (oracle/hw3/alloc_failure.py, ledger.py)
# tests/submissions/hostile/review13/asked_again.patch on the reference C: malloc and calloc are macros for a loop that
# asks up to three times while the answer is NULL, then returns it (checked as the reference checks malloc's). In
# alloc_failure's tries a call then makes more requests than it was counted making, and the grader must neither take
# that for "allocated otherwise than counted" (that rule is for the try past the count, where nothing fails) nor let
# a second ask succeed where memory ran out. Graded on compiles (5), llm_init (6), memory_safety (10) and
# alloc_failure weighed 5: honest 26/26.
ASKED_AGAIN_ITEMS = ("compiles", "llm_init", "memory_safety", "alloc_failure")
ASKED_AGAIN_HONEST = ASKED_AGAIN_MAX = 26


# held: the ledger fails every grant of the call from the k-th on (ledger.py: memory that ran out stays out), so the
# second and third asks get NULL too and the reference's own checks fail the call cleanly; the count is compared only
# in the try past it, where nothing fails and the loop asks once each time
@pytest.mark.bwrap_repeat  # the grader's ledger decides, in both isolations
def test_an_allocation_asked_again_after_it_failed_keeps_full_marks(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, None, C_ATTACKS / "asked_again.patch")
    problems = graded_problems(scene, reaper, sub, ASKED_AGAIN_ITEMS, ASKED_AGAIN_HONEST, ASKED_AGAIN_MAX,
                               {"alloc_failure": 5})
    report = json.loads((scene.out / "report.json").read_text())
    failed = [i["message"] for i in report["items"] if i["id"] == "alloc_failure"]
    assert failed and "allocations failed one at a time" in failed[0], failed
    assert not problems, "\n".join([f"asked_again (honest {ASKED_AGAIN_HONEST}/{ASKED_AGAIN_MAX}):", *problems])


# --- 3. the fallback's count of the files a run holds, hidden from a grader of the run's own uid (one-view tmp_bound)
# tests/hostile_review13/spill_unseen.py on the correct engine: at import the process makes itself not dumpable
# (prctl PR_SET_DUMPABLE 0), opens 48 files of its temporary folder while all are empty, then writes a MiB less a page
# into each (48 MiB, three times the 16 MiB bubblewrap's tmpfs holds); any refusal stops the import. Honest: 0/35 (it
# must not load) under either isolation and as either uid: bubblewrap's tmpfs answers ENOSPC, the fallback EDQUOT at
# the 17th open (as root), and on main, before one-view, the fallback's server has no temporary folder at all.
SPILL_POINTS = {"block_table": 10, "fuzz": 25}
SPILL_HONEST = 0
TMP_COUNTED = importlib.util.find_spec("oracle.tmp_bound") is not None  # one-view's count (not on main before it)
SPILL_BROKEN = (
    "the fallback's count of what a run holds in its temporary folder (one-view: oracle/tmp_bound.py `held`) reads "
    "the files it holds open for writing in /proc/PID/fd, fdinfo and maps, and a process that makes itself not "
    "dumpable (prctl PR_SET_DUMPABLE 0, no privilege needed) hands those to root: a grader of the run's own uid "
    "(not root: a course's own machine) reads nothing there (`_growing` takes the OSError for a process gone), so "
    "files held open count only at the blocks they have when the next open asks. Opened while empty, 48 files then "
    "take 1 MiB each, unasked: graded as uid 65534 without bubblewrap, spill_unseen loads and gets 35/35 for the "
    "honest 0/35, with 50,176,000 bytes in the run's temporary folder at its peak (three times the 16 MiB bound; "
    "measured with one-view's grader; as root, or without the prctl, EDQUOT at the 17th open, 0/35, 40 KiB), and, "
    "not measured, the same goes up to the open-files limit (1024 and more: a GiB of the grader's disk a run) and "
    "past it through mappings of unnamed files (O_TMPFILE, which no walk of the folder sees). Fix by construction: "
    "the count must not rest on what the run lets the grader read: what a run can write is bounded where the "
    "kernel enforces it (a file system of the run's own that the kernel sizes, or a quota on a project id of the "
    "run's folder), or a refusal the run cannot hide from: refuse every open for writing while any file of the run's"
    " is open for writing and unreadable to the grader (a process whose /proc cannot be read holds tmp_bytes), "
    "or refuse prctl(PR_SET_DUMPABLE) in oracle/seccomp.py (if no program we run needs it: not checked)")


# held as root: the grader keeps CAP_SYS_PTRACE, so a process that is not dumpable still shows it its descriptors
@pytest.mark.bwrap_repeat  # bubblewrap's tmpfs is sized by the kernel; the fallback's count is the grader's
def test_files_held_open_by_a_process_that_is_not_dumpable_are_counted_as_root(scene: Scene, reaper: Reaper) -> None:
    sub = blockspace_submission(scene, None, "spill_unseen")
    problems = blockspace_graded(scene, reaper, sub, SPILL_POINTS, SPILL_HONEST)
    assert not problems, "\n".join([f"spill_unseen as root (honest {SPILL_HONEST}/35):", *problems])


# held since the Python server writes nowhere (oracle/run_view.py): no folder, so nothing to count or hide; TMP_COUNTED
# and SPILL_BROKEN are the record of the count review 13 broke
@pytest.mark.xfail(TMP_COUNTED, strict=True, reason=SPILL_BROKEN)
@pytest.mark.skipif(nobody_cannot_grade() is not None, reason=str(nobody_cannot_grade()))
def test_files_held_open_by_a_process_that_is_not_dumpable_are_counted_as_the_graders_uid() -> None:
    from tests.test_tamper_review3a import rubric

    folder = Path(tempfile.mkdtemp(prefix="review13-", dir="/tmp"))  # pytest's folders are root's alone (0700)
    try:
        folder.chmod(0o755)
        sub = student_copy(folder / "submission")
        manager = sub / "block_manager.py"
        manager.write_text(manager.read_text() + "\n\n" + (PY_ATTACKS / "spill_unseen.py").read_text())
        rubric(folder / "rubric.toml", SPILL_POINTS)
        (folder / "tmp").mkdir()  # the grader's TMPDIR: the run's temporary folder is made in it
        graded_as_nobody(folder, str(sub), True, {"TMPDIR": str(folder / "tmp")},
                         ("--family", "blockspace", "--timeout", "2"))
        problems = check_report(folder / "out", SPILL_HONEST, sum(SPILL_POINTS.values()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert not problems, "\n".join([f"spill_unseen graded as uid {NOBODY} without bubblewrap (honest "
                                     f"{SPILL_HONEST}/35):", *problems])


# --- 4. the grader's own time, spent on a run's empty files (one-view: oracle/tmp_bound.py) -------------------------
# tests/hostile_review13/empty_files_at_import.py makes N empty files at import: its grade is full marks in both
# isolations, and what it breaks is the grader's time (N squared under the fallback), which no test asserts:
# tests/bench/tmp_folder_entries.py measures it (the table in tests/hostile_review13/README.md).


def test_every_review13_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["journal_per_sequence", "asked_again", "spill_unseen", "empty_files_at_import"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review13/{name}" in table for name in on_disk)
