"""Tamper suite, the fifth adversarial review's attacks (issue 17, round 5): hostile submissions written by a
reviewer who had not seen the day's new defences, each aimed at one of them: the fork witness's second opinion
(oracle/hw3/fork_witness.py, rules AFTER_WRONG_FORK) and the refusal's (oracle/hw3/fresh_pool.py), a prefix pool's
shown fields (`shows`, oracle/prefix/remote.py), the stray charge (oracle/hw3/stray_charge.py, the fence of
oracle/hw3/c/driver.c) and alloc_failure's choice of allocations (oracle/hw3/alloc_failure.py); with and without
bubblewrap (the `scene` fixture). The table of what each does and how it fared: tests/hostile_review5/README.md.

Same shape as tests/test_tamper_review4.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score (a hostile one: no more; a correct one
written in an unusual way: full marks), leave no process, change no file outside the scratch, and the grader must
write its report. An attack that breaks the grader today is a strict xfail naming the mechanism and a fix by
construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, patched
from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import (c_submission, check_report, grade_args, grade_in_scene, graded_problems,  # noqa: F401
                                  max_points, python_module, reaper, scene, weighted)
from tests.test_tamper_review4 import _at_most

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review5"
PY_ATTACKS = Path(__file__).with_name("hostile_review5")


# --- 1. the fork witness blamed for a free's bug -------------------------------------------------------------------
# tests/hostile_review5/free_drops_shared.py on the correct Python engine: free_sequence drops every reference of a
# block it shares (Task 2's bug: a free gives back its own reference), the fork is correct. Graded on llm_init (6),
# create_free (10) and fork, which a course weighs 2: the honest grade is 8/18 (create_free fails: its rule; fork
# passes: it took its references, as an append to a shared block after it shows by copying). A witness that blames
# the fork moves the 10 points' failure to the 2 points' item: 16/18.
FREE_ITEMS = ("llm_init", "create_free", "fork")
FREE_HONEST, FREE_MAX = 8, 18
# Once 16/18: the fork witness asked only whether, after the fork, freeing the parent and filling the pool left one
# create refused (against a control without the fork), and a greedy free fails that too, so the create granted a
# block the child still held was charged to the fork (rules AFTER_WRONG_FORK -> Task 3), weighed 2, not to
# create_free (10). Fair by construction: the witness shows the fork wrong only by what a fork without references
# does that a correct fork with a greedy free does not: after the fork, an append of the graded run to a block the
# fork's parent and child share wrote in place (the pool's bytes, read by the grader), where a fork that took its
# references leaves the block shared and the append copies it; no append in place, no blame on the fork.


def _free_drops_shared(scene: Scene) -> Path:
    engine = (ROOT / "engine" / "llm_memory.py").read_text()
    (scene.mods / "review5_attack.py").write_text(f"{engine}\n\n{(PY_ATTACKS / 'free_drops_shared.py').read_text()}")
    return Path("review5_attack")


@pytest.mark.bwrap_repeat  # the fork witness's verdict, the same in both isolations
def test_a_free_that_drops_shared_references_is_not_charged_to_a_fork_weighed_low(scene: Scene,
                                                                                  reaper: Reaper) -> None:
    sub = _free_drops_shared(scene)
    problems = graded_problems(scene, reaper, sub, FREE_ITEMS, FREE_HONEST, FREE_MAX, {"fork": 2})
    assert not problems, "\n".join([f"free_drops_shared (honest score {FREE_HONEST}/{FREE_MAX}):", *problems])


def test_the_fork_witness_does_not_call_a_correct_fork_wrong_for_a_greedy_free(tmp_path: Path) -> None:
    """The mechanism alone: the fork item's programs graded on free_drops_shared's engine (its fork takes its
    references; its free gives back every one): no difference is the fork's (the create granted in fork_references.txt
    keeps its rule, as does the append in place after the first parent's free in fork_sequence.txt)."""
    from oracle.hw3 import programs
    from oracle.hw3.pyremote import served
    from oracle.hw3.resync import TrackedModel
    from oracle.hw3.run import run

    engine = (ROOT / "engine" / "llm_memory.py").read_text()
    module = tmp_path / "review5_greedy_free.py"
    module.write_text(f"{engine}\n\n{(PY_ATTACKS / 'free_drops_shared.py').read_text()}")
    blamed, found = {}, {}
    for name in programs.BY_ITEM["fork"]:
        with served(str(module)) as remote:
            trace = run(programs.load(name), remote(), TrackedModel(), fresh=remote)
        blamed[name] = [ran.number for ran in trace.steps if ran.effects is not None and ran.effects.wrong_fork]
        found[name] = any(ran.found for ran in trace.steps)
    assert blamed == {name: [] for name in programs.BY_ITEM["fork"]}
    assert found == {"fork_sequence": True, "fork_references": True, "fork_shares_blocks": False}


# --- 1b. the witness's fresh process telling itself from the graded run ------------------------------------------
# tests/hostile_review5/witness_not_alone.py on fork_no_incref: the bug is the fork's, and a process that finds another
# of the submission's alive (an abstract unix socket's name taken) forks correctly. Graded on llm_init (6), fork (8)
# and append_cow, which a course weighs 2: honest 8/16 (fork fails; the append that writes in place after it is the
# fork's doing). A witness fooled leaves the in-place append to append_cow: 14/16.
ALONE_ITEMS = ("llm_init", "fork", "append_cow")
ALONE_HONEST, ALONE_MAX = 8, 16


# Held by construction (oracle/hw3/alone.py), with and without bubblewrap: no two processes of one submission are alive
# at once. A graded run starts in a fresh process, as a witness does; its process is ended before a second opinion
# starts, and the run goes on in a fresh process that replays its calls so far. Without bubblewrap (Landlock) every
# run shares the host's network namespace, and a name bound by a process that is gone is free again: a witness
# finds what the graded run's first process found. Once 14/16 here (and 11/13 below) without bubblewrap, when the
# witness's process started while the graded run's was alive and found its abstract unix name taken.
ISOLATIONS = [pytest.param(False, id="bwrap"), pytest.param(True, id="without-bwrap")]


def _second_opinion_problems(tmp_path: Path, reaper: Reaper, without_bwrap: bool, base: str, attack: str,
                             items: tuple[str, ...], weighed: str, honest: int, full: int) -> list[str]:
    """tests/hostile_review5/<attack>.py on the broken variant `base`, graded on `items` with `weighed` worth 2: what
    its grade got that the honest score does not allow."""
    scene = Scene(tmp_path, without_bwrap=without_bwrap)
    try:
        code = python_module(base, (PY_ATTACKS / f"{attack}.py").read_text())
        (scene.mods / f"review5_{attack}.py").write_text(scene.fill(code))
        return graded_problems(scene, reaper, Path(f"review5_{attack}"), items, honest, full, {weighed: 2})
    finally:
        scene.close()


@pytest.mark.parametrize("without_bwrap", ISOLATIONS)
def test_a_fork_witness_cannot_be_told_from_the_graded_run(without_bwrap: bool, tmp_path: Path,
                                                            reaper: Reaper) -> None:
    problems = _second_opinion_problems(tmp_path, reaper, without_bwrap, "fork_no_incref", "witness_not_alone",
                                        ALONE_ITEMS, "append_cow", ALONE_HONEST, ALONE_MAX)
    assert not problems, "\n".join([f"witness_not_alone (honest score {ALONE_HONEST}/{ALONE_MAX}):", *problems])


# the same act against the refusal's second opinion (oracle/hw3/fresh_pool.py refused_for_want_of_blocks):
# tests/hostile_review5/refusal_not_alone.py on free_count_not_incremented refuses every create in a process that is
# not alone. Graded on llm_init (6), free_count (5) and create_free, which a course weighs 2: honest 8/13 (free_count
# fails: a refusal that more free blocks undo). A second opinion fooled leaves the refusal to create_free: 11/13.
REFUSAL_ITEMS = ("llm_init", "free_count", "create_free")
REFUSAL_HONEST, REFUSAL_MAX = 8, 13


@pytest.mark.parametrize("without_bwrap", ISOLATIONS)
def test_a_refusals_second_opinion_cannot_be_told_from_the_graded_run(without_bwrap: bool, tmp_path: Path,
                                                                      reaper: Reaper) -> None:
    problems = _second_opinion_problems(tmp_path, reaper, without_bwrap, "free_count_not_incremented",
                                        "refusal_not_alone", REFUSAL_ITEMS, "create_free", REFUSAL_HONEST, REFUSAL_MAX)
    assert not problems, "\n".join([f"refusal_not_alone (honest score {REFUSAL_HONEST}/{REFUSAL_MAX}):", *problems])


# --- 2. a prefix pool lying consistently in a shown field ----------------------------------------------------------
# tests/hostile_review5/free_queue_lie.py: forward_order_free's pool (tests/test_tamper_prefix.py's layout) whose
# served free queue shows each free's blocks in the order a correct free gives them back, in the places the real
# queue holds them. Honest 4/12 under a course's rubric that weighs free_queue 4 and reverse_order_free 8 (as
# review 4's free_queue_unseen, which sent the queue as null).
QUEUE_ITEMS = ("free_queue", "reverse_order_free")
QUEUE_HONEST, QUEUE_MAX = 4, 12


def _prefix_problems(scene: Scene, reaper: Reaper, attacks: tuple[str, ...]) -> list[str]:
    """forward_order_free's pool with kv_cache.py made of tests/hostile_review5/<attack>.py, each after the one
    before (none: the honest pool), graded on QUEUE_ITEMS: what its grade got that the honest score does not allow."""
    from tests.tamper_grading import prefix_grade_args, prefix_rubric
    from tests.test_tamper_prefix import submission as prefix_submission

    sub = prefix_submission(scene.mods / "student", "forward_order_free", None)
    if attacks:
        code = "\n\n".join((PY_ATTACKS / f"{attack}.py").read_text() for attack in attacks)
        (sub / "kv_cache.py").write_text(scene.fill(code))
    rubric = prefix_rubric(scene.rubric_dir / "rubric.toml", QUEUE_ITEMS)
    weighted(rubric, "free_queue", 4)
    evidence = grade_in_scene(scene, reaper, prefix_grade_args(sub, scene, rubric))
    return evidence.problems + (_at_most if attacks else check_report)(scene.out, QUEUE_HONEST, QUEUE_MAX)


# Once 8/12: a pool's observation is made in the submission's interpreter (oracle/prefix/serve.py is its __main__), and
# `shows` checks only that the shape's fields are there: the lying queue passed reverse_order_free's check, the model
# took that order over (rules.TAKEN_OVER), and the next admit, which took the real queue's head, was charged to
# free_queue. Held by construction: a free's order is judged by what the pool does, never by the queue it shows
# (oracle/prefix/taken_order.py): the blocks the program's own later admits are granted, in order, are the queue's
# order, and that is forward here (a pool that lies in its tables too is a correct pool by every fact the grader can see).
@pytest.mark.bwrap_repeat  # the program's own takes are judged, in both isolations
def test_a_prefix_pool_that_lies_consistently_in_its_free_queue_gets_no_more(scene: Scene, reaper: Reaper) -> None:
    problems = _prefix_problems(scene, reaper, ("free_queue_lie",))
    assert not problems, "\n".join([f"free_queue_lie (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# tests/hostile_review5/free_queue_not_alone.py after free_queue_lie.py: a process that finds another of the pool's
# alive (an abstract unix socket's name taken) frees tail first. Were the graded run's process alive during the
# second opinion, its replay would free correctly there and the lie would go unseen (8/12 without bubblewrap, as
# witness_not_alone). Held by construction: since drain-own there is no second opinion at all (taken_order.py: the
# graded run's own admits), and one process of the pool serves one program at a time.
def test_a_free_queue_second_opinion_cannot_be_told_from_the_graded_run(scene: Scene, reaper: Reaper) -> None:
    problems = _prefix_problems(scene, reaper, ("free_queue_lie", "free_queue_not_alone"))
    assert not problems, "\n".join([f"free_queue_not_alone (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# tests/hostile_review5/free_queue_no_drain.py after free_queue_lie.py: a one-token request right after a free is
# refused, so the second opinion's drain stops at its first admit (no directed program admits one token right after a
# free). Honest 4/12. Once 8/12: the shorter queue was always free_queue's difference, and reverse_order_free, stopped
# there on another rule's difference, passed. Held by construction (taken_order.py, branch drain-own): there is no
# drain, so the admit it refuses is never made; the free's order shows in the program's own admits (4/12).
@pytest.mark.bwrap_repeat  # as above
def test_a_pool_that_will_not_drain_its_free_queue_gets_no_more(scene: Scene, reaper: Reaper) -> None:
    problems = _prefix_problems(scene, reaper, ("free_queue_lie", "free_queue_no_drain"))
    assert not problems, "\n".join([f"free_queue_no_drain (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


def test_the_same_pool_showing_its_true_free_queue_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control: forward_order_free without the lie gets exactly 4/12 (the test above can fail)."""
    problems = _prefix_problems(scene, reaper, ())
    assert not problems, "\n".join([f"forward_order_free (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# --- 3. a stray access that is no memory error ---------------------------------------------------------------------
# tests/submissions/hostile/review5/usable_size.patch on the reference: correct C written in an unusual way, not an
# attack. ref_count on whole pages of its own (aligned_alloc), and llm_destroy scrubs it before freeing it, as far
# as glibc's malloc_usable_size says the block holds (never past what it asked for). Under valgrind (which replaces
# malloc_usable_size with its own) nothing is wrong; it must get full marks.
USABLE_ITEMS = ("compiles", "llm_init", "llm_destroy", "memory_safety")


# Once 17/27: the driver replaced malloc and the rest but not malloc_usable_size, whose glibc version reads the chunk
# header before the block: for a block that starts a page, the fence's guard page, counted as a stray access. Fair
# by construction: driver.c answers malloc_usable_size from its own record of every block (its size as asked).


def test_a_correct_submission_asking_malloc_usable_size_gets_full_marks(scene: Scene, reaper: Reaper) -> None:
    full = max_points(USABLE_ITEMS)
    problems = graded_problems(scene, reaper, c_submission(scene, None, C_ATTACKS / "usable_size.patch"), USABLE_ITEMS,
                               full, full)
    assert not problems, "\n".join(["usable_size:", *problems])


# --- 4. a robustness bug where the published sample of failed allocations never looks -----------------------------
# tests/submissions/hostile/review5/sample_skipped.patch on the reference: create_sequence makes and frees 64 scratch
# buffers (after its checks, so no refused call allocates) before the sequence; each failure is undone but the
# tenth's, written through unchecked (a crash when it fails). Graded on compiles (5) and alloc_failure, which a
# course weighs 5: the honest grade is 5/10. The control is the same bug on the first scratch buffer.
# Once 10/10: alloc_failure failed 32 allocations of a call of more, chosen by position from public code, and the
# tenth of this create's 64 was never one of them (all 64 come from one call site, so one failure a site would not
# have held either). Held by construction: every allocation of every call is failed in turn, with no sample, so the
# tenth is tried. A call of more than alloc_failure.MOST_PER_CALL (64) allocations leaves the item not run, 0 points:
# the test makes 48 scratch buffers, so the tenth is found by trying it, not by the bound.
SAMPLE_ITEMS = ("compiles", "alloc_failure")
SAMPLE_HONEST, SAMPLE_MAX = 5, 10


@pytest.mark.parametrize("unchecked", [pytest.param(10, id="tenth"), pytest.param(1, id="first-control")])
def test_an_unchecked_malloc_where_the_sample_never_looks_still_fails_alloc_failure(
        unchecked: int, scene: Scene, reaper: Reaper) -> None:
    from tests.test_grade import small_rubric

    source = patched(REFERENCE_C.read_text(), C_ATTACKS / "sample_skipped.patch")
    sub = scene.root / "submission"
    sub.mkdir()
    assert source.count("i <= 64;") == 1
    source = source.replace("i <= 64;", "i <= 48;")  # within the bound: tried, not left not run
    (sub / "llm_memory.c").write_text(source.replace("i != 10)", f"i != {unchecked})"))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(SAMPLE_ITEMS))
    weighted(rubric, "alloc_failure", 5)
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    problems = evidence.problems + check_report(scene.out, SAMPLE_HONEST, SAMPLE_MAX)
    assert not problems, "\n".join([f"sample_skipped, unchecked scratch {unchecked} (honest {SAMPLE_HONEST}):",
                                    *problems])


# --- 5. the stray charge's blind side: memory the kernel reads for the program --------------------------------------
# tests/submissions/hostile/review5/overread_by_write.patch on broken/memory_safety.patch: the one int past each L2
# table is read by the kernel (write() into a pipe of the process's own) instead of by the program: natively an
# EFAULT, no fault the fence counts, and no filter refuses write(). Honest 5/15 (compiles; memory_safety fails).
# Held (5/15, measured, with and without bubblewrap): valgrind checks a system call's buffers before the call
# ("Syscall param write(buf) points to unaddressable byte(s) at llm_memory.c:101"); only calls whose buffers it
# does not check (process_vm_readv, review 4) needed the filter
@pytest.mark.bwrap_repeat  # valgrind's check, in both isolations
def test_an_overread_made_by_the_kernel_through_write_still_fails_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "overread_by_write.patch")
    problems = graded_problems(scene, reaper, sub, ("compiles", "memory_safety"), 5, 15)
    assert not problems, "\n".join(["overread_by_write (honest score 5/15):", *problems])


def test_every_review5_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["free_drops_shared", "free_queue_lie", "free_queue_no_drain", "free_queue_not_alone",
                              "overread_by_write",
                              "refusal_not_alone",
                              "sample_skipped", "usable_size", "witness_not_alone"])
