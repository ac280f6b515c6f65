"""Tamper suite, the sixth adversarial review's attacks (issue 17, round 6): hostile submissions written by a
reviewer who had not seen the day's new defences, each aimed at one of them: one process of a submission alive at a
time (oracle/hw3/alone.py, branch one-alive), the fork witness's in-place test (oracle/hw3/fork_witness.py, branch
fork-inplace), C probes on a graded run's heap (oracle/hw3/c/probe_adapter.py, branch probe-fenced), a prefix pool's
free order from what its admits take (oracle/prefix/queue_order.py, branch queue-admits) and alloc_failure failing
every allocation (oracle/hw3/alloc_failure.py, branch alloc-every). The table of what each does and how it fared:
tests/hostile_review6/README.md.

Same shape as tests/test_tamper_review5.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score (a hostile one: no more; a correct one
written in an unusual way: full marks), leave no process, change no file outside the scratch, and the grader must
write its report. An attack that breaks the grader is a strict xfail naming the mechanism and a fix by construction;
one that holds is a plain test saying why. A test whose mechanism is on a branch not merged yet says so: its xfail
holds only where that mechanism is there (`_present`), and before it the test asserts what the grader did then.
The attacks do not depend on the isolation (each is measured under bubblewrap, the `scene` of tests/test_tamper.py,
and without it where said).
"""

import importlib
from contextlib import closing
from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import (c_submission, graded_problems, max_points, prefix_problems,  # noqa: F401
                                  python_module, python_submission, reaper)
from tests.test_tamper import scene  # noqa: F401  (under bubblewrap alone)

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review6"
PY_ATTACKS = Path(__file__).with_name("hostile_review6")


def _present(module: str, name: str | None = None) -> bool:
    """Whether a branch's mechanism is merged: `module` can be imported (and has `name`)."""
    try:
        found = importlib.import_module(module)
    except ImportError:
        return False
    return name is None or hasattr(found, name)


ONE_ALIVE = _present("oracle.hw3.alone")  # branch one-alive
ALLOC_EVERY = _present("oracle.hw3.alloc_failure", "MOST_PER_CALL")  # branch alloc-every


def _python_problems(scene: Scene, reaper: Reaper, base: str, attack: str, items: tuple[str, ...], weighed: str,
                     honest: int, full: int) -> list[str]:
    """tests/hostile_review6/<attack>.py (none where `attack` is "") on the broken variant `base`, graded on `items`
    with `weighed` worth 2: what its grade got that the honest score does not allow. The module's name is drawn
    afresh: no other test's submission has it."""
    sub = python_submission(scene, "review6", base, PY_ATTACKS / f"{attack}.py" if attack else None)
    return graded_problems(scene, reaper, sub, items, honest, full, {weighed: 2})


# The fork's bug, and where a witness fooled leaves it: fork_no_incref graded on llm_init (6), fork (8) and append_cow,
# which a course weighs 2: honest 8/16 (fork fails; the append that writes in place after it is the fork's doing, as
# tests/test_tamper_review5.py measured). A witness fooled leaves the in-place append to append_cow: 14/16.
FORK_ITEMS = ("llm_init", "fork", "append_cow")
FORK_HONEST, FORK_MAX = 8, 16


def test_the_fork_bug_alone_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control of attacks 1 and 2: fork_no_incref alone (with no attack: an empty one), graded the same way."""
    problems = _python_problems(scene, reaper, "fork_no_incref", "", FORK_ITEMS, "append_cow", FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_no_incref (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# --- 1. a resource that persists between the processes of one grading: the pools' memory file -----------------------
# tests/hostile_review6/pool_file_grown.py on fork_no_incref: at import, a process whose pools' memory file already
# has a size comes after another process of the same file (a graded run's, under alone.py); one that finds it empty
# is a second opinion's, and forks correctly there. Held (branch pool-fresh): every process of a submission, graded
# or second opinion, is handed a memory file made for it when it starts, the one before closed first
# (pyremote.served_engine), and holds it at one descriptor number (pyserve.POOLS_FD): every process finds its file
# empty at import, at the same number (tests/test_pool_fresh.py checks that directly). So this submission forks
# correctly in every process, the graded runs' too: it is a correct fork, and its honest score is full marks. The
# grade tells the three cases apart: 16/16 when every process finds its file empty, 14/16 when only the witnesses
# do (review 6 measured that with and without bubblewrap: the grading's one file kept the size earlier windows
# gave it, as it is sealed against shrinking, and a second child's was new), 8/16 when none does.
POOL_FILE_HONEST = FORK_MAX


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_fork_witness_cannot_be_told_by_the_pool_file_a_process_finds(without_bwrap: bool, tmp_path: Path,
                                                                       reaper: Reaper) -> None:
    with closing(Scene(tmp_path, without_bwrap=without_bwrap)) as world:
        problems = _python_problems(world, reaper, "fork_no_incref", "pool_file_grown", FORK_ITEMS, "append_cow",
                                    POOL_FILE_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"pool_file_grown (honest score {POOL_FILE_HONEST}/{FORK_MAX}):", *problems])


# the same test against the refusal's second opinion (fresh_pool.py refused_for_want_of_blocks):
# tests/hostile_review6/refusal_pool_file.py on free_count_not_incremented refuses every create in a process whose
# pools' file is empty at import. Graded on llm_init (6), free_count (5) and create_free, which a course weighs 2.
# Held as the test above: every process finds its file empty, so it refuses every create in the graded runs too:
# llm_init passes, create_free fails on its first create, and free_count is not run (every program stops at a
# create first): 6/13. Review 6 measured 11/13 where only the second opinion's process found its file empty (the
# refusal read as the create's own), and 8/13 is the free count's bug alone (review 5's refusal_not_alone).
REFUSAL_ITEMS = ("llm_init", "free_count", "create_free")
REFUSAL_HONEST, REFUSAL_MAX = 6, 13


def test_a_refusals_second_opinion_cannot_be_told_by_the_pool_file_a_process_finds(scene: Scene,
                                                                                  reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "free_count_not_incremented", "refusal_pool_file", REFUSAL_ITEMS,
                                "create_free", REFUSAL_HONEST, REFUSAL_MAX)
    assert not problems, "\n".join([f"refusal_pool_file (honest score {REFUSAL_HONEST}/{REFUSAL_MAX}):", *problems])


# --- 1b. the same question by /proc: held ----------------------------------------------------------------------------
# tests/hostile_review6/proc_not_alone.py on fork_no_incref: without bubblewrap (no pid namespace), a process that finds
# another server of its own module alive in /proc is a second opinion, and forks correctly there. Held with one-alive
# (8/16, measured): the graded run's process is ended before the witness starts, so the witness finds none, as the
# graded run's own process found none. Before one-alive (run.py of 3b8d35f~1) the witness ran beside the graded run's
# process and found it: 14/16 (measured; review 5's witness_not_alone, by an abstract unix name, broke the same way).
@pytest.mark.xfail(not ONE_ALIVE, strict=True, reason="before one-alive a second opinion's process ran while the graded "
                   "run's was alive, and without bubblewrap /proc shows it")
def test_a_fork_witness_finds_no_other_process_of_the_submission_in_proc(tmp_path: Path, reaper: Reaper) -> None:
    with closing(Scene(tmp_path, without_bwrap=True)) as world:
        problems = _python_problems(world, reaper, "fork_no_incref", "proc_not_alone", FORK_ITEMS, "append_cow",
                                    FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"proc_not_alone (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# --- 2. the witness's own move, seen coming: a fork that settles its references at the next call --------------------
# tests/hostile_review6/fork_settled_late.py on fork_no_incref: the fork takes its references, and drops them at the
# next call unless that call is an append to the child of the program's last record (or it ^ 1): the in-place
# witness's append. Every graded program of these items is fork_no_incref's; the witness sees a correct fork.
# Once 14/16: the in-place witness (fork_witness._writes_in_place, branch fork-inplace) replayed the program to the
# fork and appended to the child at once, the program's last record: the fork kept its references for that very
# append, the fork was never blamed, and the graded run's in-place append went to append_cow. Held by construction
# (branch fork-graded): the in-place evidence is the graded run's own (an append of the graded program that wrote its
# record in place into a block the fork's parent and child share, effects.wrote_in_place), and no call of the
# grader's follows a fork; the second opinions that remain (the references and their control) begin with a free of
# the parent, where this fork drops its references as fork_no_incref's does. Every graded program of these items
# sees fork_no_incref: 8/16.


def test_a_fork_that_settles_its_references_late_is_still_shown_wrong(tmp_path: Path) -> None:
    """The mechanism alone: fork_shares_blocks.txt (the fork item's program of an append to a shared block right
    after the fork) graded on fork_settled_late's engine and, as the control, on fork_no_incref's: the same append
    writes in place, and the fork takes it."""
    from oracle.hw3 import programs
    from oracle.hw3.pyremote import served
    from oracle.hw3.resync import TrackedModel
    from oracle.hw3.run import run

    blamed = {}
    for name, attack in (("plain", ""), ("late", (PY_ATTACKS / "fork_settled_late.py").read_text())):
        (tmp_path / f"review6_{name}.py").write_text(python_module("fork_no_incref", attack))
        with served(str(tmp_path / f"review6_{name}.py")) as remote:
            trace = run(programs.load("fork_shares_blocks"), remote(), TrackedModel(), fresh=remote)
        blamed[name] = [ran.number for ran in trace.steps if ran.effects is not None and ran.effects.wrong_fork]
    assert blamed == {"plain": [5], "late": [5]}


def test_a_fork_settled_late_gets_no_more_than_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_settled_late", FORK_ITEMS, "append_cow",
                                FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_settled_late (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# --- 3. a probe's bug hidden behind a stray access only the probe meets: held -----------------------------------------
# tests/submissions/hostile/review6/stray_in_probe.patch on broken/l1_traversal.patch: freeing a block table stops at
# the first NULL L1 slot, and where a NULL slot comes before a mapped one (a state only the probe l1_gap_free makes:
# it edits the table) it first reads one slot past each end of the L1 table. Two bugs, each of its own rule: graded on
# compiles (5), l1_traversal (4) and memory_safety (10), the honest grade is 5/19.
# With probe-fenced as first merged, a probe whose run met a stray was "left to memory_safety" (not checked, no cost):
# l1_traversal passed and memory_safety paid for the read, 9/19 (measured; before probe-fenced the probe's driver
# served glibc's heap and counted no stray: 15/19). Held by construction since (probes.judge): a stray read changes no
# state and a stray write lands on a page the driver maps for it, in no live block, so the probe goes on judging what
# the grader reads of the state and its verdict is the one it gives without the stray (tests/test_probe_adapter.py);
# the stray is charged to memory_safety alone (stray_charge.py). Only a crash or a heap the C library calls corrupt
# stops a probe.
STRAY_ITEMS = ("compiles", "l1_traversal", "memory_safety")
STRAY_HONEST = 5


def test_a_stray_access_only_a_probe_meets_does_not_excuse_the_probed_bug(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "l1_traversal", C_ATTACKS / "stray_in_probe.patch")
    problems = graded_problems(scene, reaper, sub, STRAY_ITEMS, STRAY_HONEST, max_points(STRAY_ITEMS))
    assert not problems, "\n".join([f"stray_in_probe (honest score {STRAY_HONEST}/{max_points(STRAY_ITEMS)}):",
                                    *problems])


# tests/submissions/hostile/review6/double_free_in_probe.patch on broken/l1_traversal.patch: the same attack with a
# memory error that stopped a probe. Each create frees a scratch block; in the probe's own state (a NULL L1 slot
# before a mapped one) freeing the table first frees the last scratch block again, a free made in a later call than
# the first. The driver ended the run with a heap found corrupted (status 4, driver.c's heap_fatal), which
# probes.judge leaves to memory_safety: not checked, no cost (9/19 for an honest 5/19, measured before this fix;
# memory_safety paid for the double free). Held by construction since (issue 17, branch free-stray): on the fence no
# page of the span is mapped for a block twice in a run, so a pointer that is no live block (and that the call did
# not free itself) can be no later block's, and freeing it changes no live block. The driver's free then lets the
# call go on as a stray access the grader counts from outside (driver.c's stray_free reads a page of the span no
# block was given, which faults and is mapped: the ledger counts it), so the probe goes on judging what the grader
# reads and finds the l1_traversal bug; the double free costs memory_safety alone. Only a fault the run cannot go
# on past (a runaway past 64 pages in a call, a crash) stops a probe. Same items, same honest 5/19.


def test_a_double_free_only_a_probe_meets_does_not_excuse_the_probed_bug(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "l1_traversal", C_ATTACKS / "double_free_in_probe.patch")
    problems = graded_problems(scene, reaper, sub, STRAY_ITEMS, STRAY_HONEST, max_points(STRAY_ITEMS))
    assert not problems, "\n".join([f"double_free_in_probe (honest score {STRAY_HONEST}/{max_points(STRAY_ITEMS)}):",
                                    *problems])


# --- 4. a prefix pool that refuses the drain --------------------------------------------------------------------------
# tests/hostile_review6/drain_refused.py on forward_order_free (prefix): the pool refuses an admit of one token that is
# its own request's number (the drain's, once `admit(past + i, [past + i])`), which no directed program makes. Honest
# 4/12 under a course's rubric that weighs free_queue 4 and reverse_order_free 8 (review 5's free_queue_lie, whose
# control queue-admits measured at 4/12).
QUEUE_ITEMS = ("free_queue", "reverse_order_free")
QUEUE_HONEST, QUEUE_MAX = 4, 12


def _prefix_problems(tmp_path: Path, reaper: Reaper, attack: str, score: int) -> list[str]:
    """tests/hostile_review6/<attack>.py as the kv_cache.py of forward_order_free's pool, graded on QUEUE_ITEMS with
    free_queue worth 4: what its grade got that `score` (of QUEUE_MAX) does not allow."""
    return prefix_problems(tmp_path, reaper, "forward_order_free", PY_ATTACKS / f"{attack}.py", QUEUE_ITEMS, score,
                           QUEUE_MAX, {"free_queue": 4})


# Once 8/12: a drain not granted one block each said nothing, and the free's order was judged nowhere (the refused
# drain kept reverse_order_free's bug from its own check; the next admit, taking the blocks in the pool's order, was
# charged to free_queue). Held by construction (oracle/prefix/taken_order.py, branch drain-own): there is no drain; a
# free's order is judged where the graded program's own admits take its blocks, so the admits this pool refuses are
# never made and it is forward_order_free's pool, graded so (in this process: tests/test_prefix_taken_order.py).
def test_a_prefix_pool_that_refuses_the_drain_gets_no_more(tmp_path: Path, reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "drain_refused", QUEUE_HONEST)
    assert not problems, "\n".join([f"drain_refused (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# tests/hostile_review6/drain_spotted.py on forward_order_free: the same refusal, aimed at the drain of branch
# queue-drain (one round token past every token the pool was given, which neither program admits). With the drain, each
# free was judged wrong where its drain was refused: 0/12. Since drain-own there is no drain (the free's order shows in
# the program's own admits), the refused admit is never made, and the pool is forward_order_free's: its honest 4/12.
def test_a_prefix_pool_that_spots_and_refuses_the_drain_fails_the_frees_it_hid(tmp_path: Path,
                                                                                reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "drain_spotted", QUEUE_HONEST)
    assert not problems, "\n".join([f"drain_spotted (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# tests/hostile_review6/fresh_pool_correct.py on forward_order_free: the first pool a process makes frees tail first
# (correctly), every later one head first. Once 8/12 (measured by the review with queue-admits at c719343): the drain
# ran in a second process started afresh for it (RemotePrefix.apart), and every graded program in the grading's one
# served process, after the programs before it, so the drain saw a correct free and the graded run a wrong one. Held
# by construction (queue-admits, c121ad7 and 93a18e4: no process of a pool younger than another): each directed
# program starts in a fresh process (checks.py, `alone`), the graded run's process is ended before the drain's replay,
# and goes on in a fresh one that replays its calls, so every pool the grader makes or observes, the graded run's and
# the drain's, is the first its process makes. This pool frees tail first in every one of them: it is graded as the
# correct pool it is wherever it runs, 12/12 (a bug only a second pool of one process shows is no directed program's).
# Since drain-own there is no drain; each directed program still starts in a fresh process (checks.py, `alone`).
def test_a_prefix_pool_correct_only_in_a_fresh_process_is_correct_wherever_it_is_graded(tmp_path: Path,
                                                                                         reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "fresh_pool_correct", QUEUE_MAX)
    assert not problems, "\n".join([f"fresh_pool_correct (every pool graded is a first one: {QUEUE_MAX}/{QUEUE_MAX}):",
                                     *problems])


# --- 5. alloc_failure's cost: a correct submission that allocates much in every call ---------------------------------
# tests/submissions/hostile/review6/many_scratch_allocations.patch on the reference: correct C written in an unusual
# way, not an attack. Every call first makes and frees 500 scratch buffers, each checked (one that cannot be had is
# skipped: the call succeeds regardless). Graded on compiles (5)
# and alloc_failure, which a course weighs 5: it must get 10/10. (A call past the bound, review 2's spare_records, is
# that branch's own strict xfail.)
SCRATCH_ITEMS = ("compiles", "alloc_failure")
SCRATCH_MAX = 10
# Once a grade the clock decided: at a bound of 512 allocations a call, each of the program's calls had its 500 tried,
# each try replaying the program from a fresh driver, and alloc_failure ran out the grade's time (5/10 at 300 s,
# measured; main's earlier sample of 32 tries a call graded it 10/10 in 96 s). Since the bound is 64
# (alloc_failure.MOST_PER_CALL) a count decides, the same on every machine: the worst case, six calls of 64, is 384
# tries. What is left is below.
COST_BROKEN = (
    "alloc_failure fails every allocation of every call in turn and leaves the item not run (0 points) when a call "
    "of allocation_failure.txt makes more than alloc_failure.MOST_PER_CALL (64) allocations: this correct "
    "submission's 500 checked scratch buffers a call get it 5/10 for a correct 10/10, the same on every machine. Not "
    "fixed by failing fewer: one allocation a call site (first and last) would not hold review 5's sample_skipped, "
    "whose 64 buffers come from one site with a check that skips the tenth; a sample by position is what that attack "
    "beat. Measured (tests/bench/alloc_try_cost.py, bubblewrap, load 11 on 2 cores): a call's 503 allocations make "
    "1003 mapping calls the ledger answers, 97 ms a call; its 3018 tries with a fresh driver each, replaying the calls "
    "before its own, project to 1307 s, 1000 s with a driver start for free, and 267 s with no start and no replay "
    "at all: the cost is the fenced heap's round trip per mapping call, not the isolation. Tries in one sandbox leak "
    "the try's number (successive pids), and a submission told k can check the k-th allocation alone")


@pytest.mark.xfail(ALLOC_EVERY, strict=True, reason=COST_BROKEN)
def test_a_correct_submission_allocating_much_in_every_call_gets_full_alloc_failure(scene: Scene,
                                                                                   reaper: Reaper) -> None:
    """Graded with the default time limit: alloc_failure's bound is a count, met in seconds."""
    sub = c_submission(scene, None, C_ATTACKS / "many_scratch_allocations.patch")
    problems = graded_problems(scene, reaper, sub, SCRATCH_ITEMS, SCRATCH_MAX, SCRATCH_MAX, {"alloc_failure": 5})
    assert not problems, "\n".join(["many_scratch_allocations (correct):", *problems])


def test_every_review6_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["double_free_in_probe", "drain_refused", "drain_spotted", "fork_settled_late",
                              "fresh_pool_correct",
                              "many_scratch_allocations", "pool_file_grown", "proc_not_alone", "refusal_pool_file",
                              "stray_in_probe"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"review6/{name}" in table for name in on_disk)
