"""Tamper suite, the ninth adversarial review's attacks (issue 17, round 9): hostile submissions written by a
reviewer who had not seen the defences landed the day before, each on top of a known bug and aimed at one of them
(oracle/seccomp.py's metadata and watch refusals, oracle/runtime.py's private Python, the pools' file read
O_NOATIME, refusal_rule.py, heap-nonfatal, alloc_failure's every-grant-fails, taken_order/settlement). The table of
what each does and how it fared: tests/hostile_review9/README.md.

Same shape as tests/test_tamper_review8.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. An attack that breaks the grader is a strict xfail naming the
mechanism and a fix by construction; one that holds is a plain test saying why. Each grading test runs under
bubblewrap and without it (the `scene` below).
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import graded_problems, prefix_problems, python_submission, reaper, scene  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review9"
PY_ATTACKS = Path(__file__).with_name("hostile_review9")
# `scene`: each attack's world, under bubblewrap and without it (the Landlock fallback and the private Python)


def _python_problems(scene: Scene, reaper: Reaper, base: str, attack: str, items: tuple[str, ...], weighed: str,
                     honest: int, full: int) -> list[str]:
    """tests/hostile_review9/<attack>.py on the broken variant `base`, graded on `items` with `weighed` worth 2:
    what its grade got that the honest score does not allow. The module's name is drawn afresh."""
    sub = python_submission(scene, "review9", base, PY_ATTACKS / f"{attack}.py")
    return graded_problems(scene, reaper, sub, items, honest, full, {weighed: 2})


# --- 1. a fork told from the witness's by the page cache (pool_file O_NOATIME, seccomp's watch refusals) ----------
# tests/hostile_review9/fork_told_by_page_cache.py on fork_no_incref: review 8's fork_unwatched told the graded run
# by the pools' file's access time, fork_unwatched_inotify by inotify; both are closed. This one reads nothing of the
# grader's: the kernel's page cache is shared by every process of the machine, and every process of a submission
# reads the same standard library (one inode). A process drops a page of it (posix_fadvise DONTNEED), waits, and asks
# whether it is back (preadv2 RWF_NOWAIT); the first process keeps it there with a thread, so a second opinion
# started while it lives (the fork witness's fresh process) finds it back and forks correctly. Graded on llm_init (6),
# fork (8) and append_cow weighed 2, as review 8's: honest 8/16.
FORK_ITEMS = ("llm_init", "fork", "append_cow")
FORK_HONEST, FORK_MAX = 8, 16
PAGE_CACHE_BROKEN = (
    "the fork witness's process is started while the graded run's server lives, and the kernel's page cache is one "
    "for both: the graded process keeps a page of a standard-library file cached (a thread reading it), a later "
    "process drops it (posix_fadvise DONTNEED, open to any reader) and finds it back (preadv2 RWF_NOWAIT), so it "
    "knows it is a second opinion and forks correctly there. Closed by construction on main: no second opinion "
    "runs while another process of the submission lives (alone.py), so nothing alive can answer it")


# held: alone.py ends the graded run's process before any second opinion starts, so no living process keeps the page
# (8/16 under bubblewrap and in the fallback). PAGE_CACHE_BROKEN is what it would break, kept as the record
def test_a_fork_told_by_the_page_cache_where_the_witness_runs_is_still_shown_wrong(scene: Scene,
                                                                                   reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_told_by_page_cache", FORK_ITEMS,
                                "append_cow", FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_told_by_page_cache (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# --- 2. a fork marked in the page cache for the witness's replay (alone.py, O_NOATIME, seccomp's watch refusals) ---
# tests/hostile_review9/fork_marked_in_page_cache.py on fork_no_incref: attack 1 asked a living process, and alone.py
# ends the graded run's process before a second opinion starts. A page of the page cache outlives its process: the
# first process to make a fork after a given history (the graded run's) makes a page of a standard-library file
# resident, chosen by the history and a two-second epoch, and forks as fork_no_incref does; the fork witness's fresh
# process, replaying the same history a moment later, finds it resident (preadv2 RWF_NOWAIT), spends it (posix_fadvise
# DONTNEED) and forks correctly. The control and the honest score: as attack 1. Measured 14/16 or 16/16 (16 where
# the graded run's process itself finds the mark of an earlier process that made the same calls a moment before).
# Since fork-alone no second process makes the program's calls for a fork (fork_witness.py reads the graded run's own
# later calls, made ahead in its process: graded_calls.py), so REPLAY_MARKED, what broke first, is closed. Still broken
# (measured 14/16, 8 runs of 8, in both isolations, `--runxfail`): MARKED_BROKEN, the same mark read by a later
# graded run.
REPLAY_MARKED = (
    "alone.py ends the graded run's process before a second opinion, but the kernel's page cache outlives it and is "
    "one for every process of the machine: the graded run's fork makes a page of a standard-library file resident "
    "(chosen by the calls before it and the time), and the fork witness's replay of the same calls a moment later "
    "finds it (preadv2 RWF_NOWAIT) and forks correctly")
MARKED_BROKEN = (
    "no second process replays a graded program for its fork any more (fork-alone), but graded runs of other "
    "programs are processes that make the same calls in turn: fork_references and fork_shares_blocks (the fork "
    "item's) make the same four calls before their fork, and the attack's four slots a two-second epoch let forks "
    "of other histories find a mark too. Its forks are then correct in some graded runs and not in others: the fork "
    "item's one unambiguous program (fork_shares_blocks, its append in place) sees a correct fork after "
    "fork_references' wrong one (shown only by a create granted, create_free's rule, read past), and a program whose "
    "forks of one block are mixed (append_kv_shared_by_four: one without its reference, one with) shows an append "
    "in place whose references never show (the copies the correct forks cause leave no grant after the sharer's "
    "free): append_cow's rule, 14/16 for 8/16. Fix by construction: evidence of a fork's missing reference that a "
    "mixture cannot hide (an engine whose appends copy a shared block elsewhere in the same run does not write one "
    "in place but for a reference missing), or a fork item whose every program shows a fork without references "
    "unambiguously, so that whichever run a submission is wrong in costs the fork")


# Held since fork-evidence: an append that wrote a block a fork's two share in place is charged to the fork's rule as
# well as append_cow's where the same graded run shows its appends copy a block (a correct fork's copy, before or
# after it: fork_witness.copies_after), so forks of one block mixed in a run cost the fork item: fork_shares_blocks
# (its forks both without references: the grant after the free; one without: a copy by the other) fails it, and
# append_kv_shared_by_four fails append_cow as well: 6/16, each item once, measured 8 runs of 8 under bubblewrap and
# in the fallback. The mixture is the submission's, and each of the two rules could be the broken one, so both
# items are charged (review 11's test allows the same); what may not happen is a grade above the honest one or the
# fork item passing. MARKED_BROKEN is what it broke, kept as the record
def test_a_fork_marked_in_the_page_cache_for_the_witness_is_still_shown_wrong(scene: Scene, reaper: Reaper) -> None:
    import json

    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_marked_in_page_cache", FORK_ITEMS,
                                "append_cow", FORK_HONEST, FORK_MAX)
    report = json.loads((scene.out / "report.json").read_text())
    problems = [p for p in problems if not p.startswith("score ")]  # below the honest one: both items charged
    if report["score"] > FORK_HONEST or report["max_score"] != FORK_MAX:
        problems.append(f"score {report['score']}/{report['max_score']}, above the honest {FORK_HONEST}/{FORK_MAX}")
    problems += [f"the fork item {item['status']}: {item['message'][:200]}" for item in report["items"]
                 if item["id"] == "fork" and item["status"] == "passed"]
    assert not problems, "\n".join([f"fork_marked_in_page_cache (honest score {FORK_HONEST}/{FORK_MAX}):",
                                    *problems])


# --- 3. a touch bug whose only trace is the take order (taken_order.py, settlement.py) -----------------------------
# tests/hostile_review9/touch_rotates_queue.py, the kv_cache.py of a correct engine/prefix: a cache hit on a free
# block takes it out of the queue by rotating the queue until it is at the head (the touch rule's bug: the others'
# order changes). Graded on touch alone (8): the rubric leaves free_queue out, the course's choice. Honest 0/8.
def _prefix_problems(tmp_path: Path, reaper: Reaper, attack: str, items: tuple[str, ...], honest: int, full: int,
                     without_bwrap: bool) -> list[str]:
    return prefix_problems(tmp_path, reaper, None, PY_ATTACKS / f"{attack}.py", items, honest, full,
                           without_bwrap=without_bwrap)


ROTATES_BROKEN = (
    "the touch item's program never reads the free queue's order after a hit on a free block that is not at the "
    "queue's head, so a touch that takes the block out by rotating the queue (the others' order changed) passes it: "
    "graded on touch alone the bug costs nothing (8/8 for the honest 0/8); graded on every item the fuzz finds it and "
    "names it free_queue's (80/100, free_queue and fuzz failed, touch passed: the right total, the wrong item). Fix by "
    "construction: touch's program makes a hit on a free block in the middle of the queue and then takes every free "
    "block (so the takes read the whole queue's order after the touch), and taken_order names a take order that the "
    "call's touches explain (the queue as the model's with the touched blocks' predecessors moved) touch's, not "
    "free_queue's")


# held since touch-takes: touch's program hits block 2 in the middle of the free queue, then takes every other free
# block, and taken_order.touch_explains names the order the rotation leaves ([4, 3, 6] for [6, 4, 3]) touch's: 0/8
# under bubblewrap and in the fallback (graded on every item: 80/100, touch and fuzz failed, the fuzz's difference
# named touch's too, free_queue passed). ROTATES_BROKEN is what it broke, kept as the record
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the program's own takes are judged, in both
def test_a_touch_that_rotates_the_queue_costs_the_touch_item(without_bwrap: bool, tmp_path: Path,
                                                             reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "touch_rotates_queue", ("touch",), 0, 8, without_bwrap)
    assert not problems, "\n".join(["touch_rotates_queue (honest score 0/8):", *problems])


def test_every_review9_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["fork_marked_in_page_cache", "fork_told_by_page_cache", "touch_rotates_queue"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table for name in on_disk)
