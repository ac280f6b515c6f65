"""Tamper suite, the seventh adversarial review's attacks (issue 17, round 7): hostile submissions written by a
reviewer who had not seen the defences landed the session before, each aimed at one of them: one process of a
submission alive at a time and the replay after a second opinion (oracle/hw3/alone.py), a fresh pools' file for each
(pool_file.py, pyremote.py), the fork witness whose evidence is the graded run's own append and whose second opinion
checks the references against a control (oracle/hw3/fork_witness.py), a prefix pool's free order from a drain in a
fresh process (oracle/prefix/queue_order.py), and C probes on the fenced heap where a stray costs memory_safety alone
and a free of a non-live pointer is a stray (driver.c's stray_free). The table of what each does and how it fared:
tests/hostile_review7/README.md.

Same shape as tests/test_tamper_review6.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score (a hostile one: no more; a correct one
written in an unusual way: full marks), leave no process, change no file outside the scratch, and the grader must
write its report. An attack that breaks the grader is a strict xfail naming the mechanism and a fix by construction;
one that holds is a plain test saying why. Each grading test runs under bubblewrap and without it (the `scene` below).
The attacks that hold as root and break where the grader runs as the runs' own uid:
tests/test_tamper_review7_own_uid.py.
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import (c_submission, graded_problems, max_points, prefix_problems,  # noqa: F401
                                  python_module, python_submission, reaper, scene)

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review7"
PY_ATTACKS = Path(__file__).with_name("hostile_review7")
# `scene`: each attack's world, under bubblewrap and without it (the Landlock fallback): none of these mechanisms
# rests on the isolation, and each is measured under both


def _c_problems(scene: Scene, reaper: Reaper, base: str, attack: str | None, items: tuple[str, ...],
                honest: int) -> list[str]:
    """tests/submissions/hostile/review7/<attack>.patch (None: none) on broken/<base>.patch, graded on `items`: what
    its grade got that the honest score does not allow."""
    sub = c_submission(scene, base, None if attack is None else C_ATTACKS / f"{attack}.patch")
    return graded_problems(scene, reaper, sub, items, honest, max_points(items))


def _python_problems(scene: Scene, reaper: Reaper, base: str, attack: str, items: tuple[str, ...], weighed: str,
                     honest: int, full: int) -> list[str]:
    """tests/hostile_review7/<attack>.py (none: "") on the broken variant `base`, graded on `items` with `weighed`
    worth 2: what its grade got that the honest score does not allow. The module's name is drawn afresh."""
    sub = python_submission(scene, "review7", base, PY_ATTACKS / f"{attack}.py" if attack else None)
    return graded_problems(scene, reaper, sub, items, honest, full, {weighed: 2})


# --- 1. a probe's bug hidden behind a memory error the fence still ends a run for ---------------------------------
# tests/submissions/hostile/review7/realloc_in_probe.patch and runaway_in_probe.patch on broken/l1_traversal.patch:
# review 6's stray_in_probe and double_free_in_probe, past their fixes. Where a NULL L1 slot comes before a mapped one
# (a state only the probe l1_gap_free makes: it edits the table), freeing the table first makes a memory error the
# fence does not let a call go on past: a realloc of the scratch block an earlier call freed (driver.c's realloc:
# heap_fatal, "not a live heap block"; its free is a stray since free-stray, its realloc is not), or a read of 65 pages
# of the span far above every block (fence_fault maps at most MAX_FAULTED = 64 stray pages a call, then heap_fatal).
# Either ends the probe's driver with "a heap found corrupted" (status 4), which probes._verdict leaves to
# memory_safety: the probe checks nothing and costs nothing, so l1_traversal passes. Two bugs, each of its own rule:
# graded on compiles (5), l1_traversal (4) and memory_safety (10), the honest grade is 5/19.
PROBE_ITEMS = ("compiles", "l1_traversal", "memory_safety")
PROBE_HONEST = 5
HEAP_FATAL_BROKEN = (
    "on the fence a probe whose call ends in heap_fatal (a realloc or malloc_usable_size of a pointer that is no live "
    "block, or a 65th stray page in one call) is 'left to memory_safety' (probes._verdict, heap_corrupted): it checks "
    "nothing and costs nothing, so a submission that makes such an error only in a probe's own state keeps the probed "
    "bug. Fix by construction: on the fence no memory error is a heap found corrupted later (every one is caught at "
    "the access that makes it), so none need end the run: a realloc or malloc_usable_size of a non-live pointer is a "
    "stray as its free is (stray_free, then the call goes on: realloc answers NULL), and past 64 stray pages in a call "
    "every further stray lands on one sink page counted once more; then the only stop in a probe's call is a crash, "
    "its item's, and heap_corrupted on the fence (and _left_to_memory_safety) is gone. It must go whatever the reply "
    "says: status 4 is the driver's reply, which code in the call can forge on the reply pipe and then end the process "
    "(forged_heap_reply): heap corruption is a fact only where the grader saw it (its ledger's strays, valgrind's log)")


# held since on the fence no memory error ends a run and a status-4 reply is a crash (heap-nonfatal): HEAP_FATAL_BROKEN
# is what broke before
@pytest.mark.parametrize("attack", ["realloc_in_probe", "runaway_in_probe"])
@pytest.mark.bwrap_repeat  # the fence and the ledger, the same in both isolations
def test_a_memory_error_that_ends_a_probes_run_does_not_excuse_the_probed_bug(attack: str, scene: Scene,
                                                                             reaper: Reaper) -> None:
    problems = _c_problems(scene, reaper, "l1_traversal", attack, PROBE_ITEMS, PROBE_HONEST)
    assert not problems, "\n".join([f"{attack} (honest score {PROBE_HONEST}/{max_points(PROBE_ITEMS)}):", *problems])



# tests/submissions/hostile/review7/forged_heap_reply.patch on broken/l1_traversal.patch: the same with no memory error
# at all. In the same probe-only state, a reply of status 4 ("heap corrupted") is written on the driver's reply pipe
# (its number is on the driver's command line: found below environ since proc-mem, /proc/self/cmdline before), and the
# process ends. The grader takes the status for a fact: the probe is left to memory_safety, l1_traversal passes
# unchecked and memory_safety fails on the process's word, 9/19. Its honest grade is l1_traversal's bug alone (the
# forged reply a crash of the probed call, its item's): 15/19. It scores less than that here, but both verdicts are
# wrong, and under a course's weights (l1_traversal worth more than memory_safety) or on a submission failing
# memory_safety anyway it scores more.
FORGED_HONEST = 15


def test_the_l1_traversal_bug_alone_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control of forged_heap_reply: broken/l1_traversal.patch alone, graded the same way."""
    problems = _c_problems(scene, reaper, "l1_traversal", None, PROBE_ITEMS, FORGED_HONEST)
    assert not problems, "\n".join([f"l1_traversal (honest score {FORGED_HONEST}/19):", *problems])


# held since on the fence no memory error ends a run and a status-4 reply is a crash (heap-nonfatal): HEAP_FATAL_BROKEN
# is what broke before
# (named without the word check_report looks for in a report: the scratch folder takes the test's name)
@pytest.mark.bwrap_repeat  # the grader's reading of the reply, the same in both
def test_a_heap_reply_the_call_wrote_itself_is_not_taken_for_a_memory_error(scene: Scene, reaper: Reaper) -> None:
    problems = _c_problems(scene, reaper, "l1_traversal", "forged_heap_reply", PROBE_ITEMS, FORGED_HONEST)
    assert not problems, "\n".join([f"forged_heap_reply (honest score {FORGED_HONEST}/19):", *problems])

# --- 2. the fork witness's second opinion, seen coming: a fork that keeps its references for a free of its parent ----
# tests/hostile_review7/fork_kept_for_free.py on fork_no_incref: the fork takes its references and drops them at the
# next call unless that call frees the fork's parent, the references' witness's first move after the replayed fork
# (fork_witness._with_checks). Every graded program of these items sees fork_no_incref: its in-place append after the
# fork is the graded run's own evidence, but the witness then sees a correct fork (the child keeps its blocks, the
# pool's last block is refused) and never blames it, so the in-place append goes to append_cow. Graded on llm_init
# (6), fork (8) and append_cow weighed 2, as review 6's fork_settled_late: the fork's bug is honest 8/16 (fork fails),
# a witness fooled leaves the in-place append to append_cow, 14/16.
FORK_ITEMS = ("llm_init", "fork", "append_cow")
FORK_HONEST, FORK_MAX = 8, 16
WITNESS_BROKEN = (
    "the references' second opinion (fork_witness._references_missed) always follows the replayed fork with a free of "
    "its parent, a call the submission sees coming: a fork whose references are its own word keeps them for exactly "
    "that call and drops them at any other, so the witness sees a correct fork where every graded run sees none, and "
    "the in-place append is charged to append_cow. Fix by construction: no second opinion whose verdict rests on a "
    "move the grader chose after the fork; the references' evidence must be a call of the graded program too (the "
    "graded run's own free of a sharer, then what its later creates or appends are granted, read from the pool), or, "
    "for a Python engine whose references no answer shows, the fork item not graded on the references at all")


def _blamed_forks(tmp_path: Path, attack: str) -> list[int]:
    """The steps of fork_shares_blocks.txt (the fork item's program of an append to a shared block right after the
    fork) whose difference the fork witness blamed on the fork, graded on fork_no_incref with `attack` on top."""
    from oracle.hw3 import programs
    from oracle.hw3.pyremote import served
    from oracle.hw3.resync import TrackedModel
    from oracle.hw3.run import run

    code = "" if attack == "plain" else (PY_ATTACKS / f"{attack}.py").read_text()
    (tmp_path / f"review7_{attack}.py").write_text(python_module("fork_no_incref", code))
    with served(str(tmp_path / f"review7_{attack}.py")) as remote:
        trace = run(programs.load("fork_shares_blocks"), remote(), TrackedModel(), fresh=remote)
    return [ran.number for ran in trace.steps if ran.effects is not None and ran.effects.wrong_fork]


def test_the_fork_witness_blames_fork_no_incref_alone(tmp_path: Path) -> None:
    """The control of attack 2's mechanism: fork_no_incref's in-place append at step 5 is blamed on the fork."""
    assert _blamed_forks(tmp_path, "plain") == [5]


# held since the fork witness judges the references by the graded program's own calls (fork_witness.py, branch
# fork-refs): WITNESS_BROKEN is what broke before
def test_a_fork_that_keeps_its_references_for_the_witness_is_still_shown_wrong(tmp_path: Path) -> None:
    """The mechanism alone: the same program on fork_kept_for_free's engine: the same append writes in place."""
    assert _blamed_forks(tmp_path, "fork_kept_for_free") == [5]


def test_the_fork_bug_alone_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control of attack 2: fork_no_incref alone, graded the same way."""
    problems = _python_problems(scene, reaper, "fork_no_incref", "", FORK_ITEMS, "append_cow", FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_no_incref (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# held since the fork witness judges the references by the graded program's own calls (fork_witness.py, branch
# fork-refs): WITNESS_BROKEN is what broke before
@pytest.mark.bwrap_repeat  # the witness reads the program's own calls, in both
def test_a_fork_kept_for_the_witness_gets_no_more_than_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_kept_for_free", FORK_ITEMS, "append_cow",
                                FORK_HONEST, FORK_MAX)
    assert not problems, "\n".join([f"fork_kept_for_free (honest score {FORK_HONEST}/{FORK_MAX}):", *problems])


# --- 3. a prefix pool that grants the drain a correct order ----------------------------------------------------------
# tests/hostile_review7/drain_regranted.py on forward_order_free (prefix): at the drain's first admit (one round token
# past every token the pool was given; no directed program makes one) the pool puts the blocks its last free gave
# back into their places in the queue tail first, then grants the admit: the drain takes one block each, in a correct
# free's order; every graded run keeps the head-first order. Graded on free_queue weighed 4 and reverse_order_free (8),
# as review 6's drain attacks: forward_order_free's honest score is 4/12.
QUEUE_ITEMS = ("free_queue", "reverse_order_free")
QUEUE_HONEST, QUEUE_MAX = 4, 12


def _prefix_problems(tmp_path: Path, reaper: Reaper, attack: str, score: int, without_bwrap: bool = False) -> list[str]:
    """tests/hostile_review7/<attack>.py as the kv_cache.py of forward_order_free's pool, graded on QUEUE_ITEMS with
    free_queue worth 4: what its grade got that `score` (of QUEUE_MAX) does not allow."""
    return prefix_problems(tmp_path, reaper, "forward_order_free", PY_ATTACKS / f"{attack}.py" if attack else None,
                           QUEUE_ITEMS, score, QUEUE_MAX, {"free_queue": 4}, without_bwrap)


DRAIN_BROKEN = (
    "the drain's admits (queue_order.queue_order: one round token past every number the program names) are calls no "
    "directed program makes, so a pool sees them coming and can grant them in any order it likes, one block each, "
    "while every graded run keeps its own order: the free's order passes at the drain and the graded run's next admit, "
    "taking the blocks in the pool's order, is charged to free_queue. Fix by construction still to find: a drain whose "
    "calls are the graded program's own (its next admits as written, replayed past the free in a fresh process), so "
    "nothing tells it from the graded run; where no admit of the program takes the freed blocks, the free's order is "
    "shown by no program and not judged")


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_forward_order_free_alone_gets_its_honest_score(without_bwrap: bool, tmp_path: Path, reaper: Reaper) -> None:
    """The control of attack 3: forward_order_free with the plain kv_cache.py, graded the same way."""
    problems = _prefix_problems(tmp_path, reaper, "", QUEUE_HONEST, without_bwrap)
    assert not problems, "\n".join([f"forward_order_free (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# held since a free's order is judged by the graded program's own takes (oracle/prefix/taken_order.py, no drain):
# DRAIN_BROKEN is what broke before
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the program's own takes are judged, in both
def test_a_prefix_pool_that_grants_the_drain_a_correct_order_gets_no_more(without_bwrap: bool, tmp_path: Path,
                                                                          reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "drain_regranted", QUEUE_HONEST, without_bwrap)
    assert not problems, "\n".join([f"drain_regranted (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# --- 4. alloc_failure fails one allocation at a time: a second try always has it -------------------------------------
# tests/submissions/hostile/review7/malloc_twice.patch on broken/alloc_failure.patch (create_sequence returns NULL and
# leaks what it built when an L2 table cannot be had): new_l2_table asks malloc again when it answers NULL. The grader
# fails the k-th allocation of a call and grants the k+1-th (alloc_failure._inject, the ledger's one failure), so the
# second try always has its table and the leaking path is never reached, though on a heap that is out of memory (where
# the next malloc fails too) it is exactly alloc_failure's bug. Graded on compiles (5) and alloc_failure, which a course
# weighs 5: the bug's honest grade is 5/10.
ALLOC_ITEMS = ("compiles", "alloc_failure")
ALLOC_HONEST, ALLOC_MAX = 5, 10
ONE_FAILURE_BROKEN = (
    "alloc_failure fails the k-th allocation of a call and grants every later one (the ledger fails one grant), "
    "which no heap out of memory does: a submission that asks malloc again on NULL never reaches its unchecked path "
    "and passes with alloc_failure's own bug. Fix by construction: from the k-th allocation of the call on, every "
    "grant fails (ENOMEM until the call's reply), as memory that has run out stays out; a correct call still fails "
    "cleanly or succeeds regardless, and a retry meets NULL again")


def _alloc_problems(scene: Scene, reaper: Reaper, attack: str | None) -> list[str]:
    sub = c_submission(scene, "alloc_failure", None if attack is None else C_ATTACKS / f"{attack}.patch")
    return graded_problems(scene, reaper, sub, ALLOC_ITEMS, ALLOC_HONEST, ALLOC_MAX, {"alloc_failure": 5})


def test_the_alloc_failure_bug_alone_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control of attack 4: broken/alloc_failure.patch alone, graded the same way."""
    problems = _alloc_problems(scene, reaper, None)
    assert not problems, "\n".join([f"alloc_failure (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


# held since from the k-th allocation of a call on every grant fails (ledger.py, driver.c injected_failure):
# ONE_FAILURE_BROKEN is what broke before
@pytest.mark.bwrap_repeat  # the ledger fails every later grant, in both
def test_an_allocation_asked_for_twice_does_not_hide_the_alloc_failure_bug(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "malloc_twice")
    assert not problems, "\n".join([f"malloc_twice (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


# --- 5. the refusal's second opinion, told by its pool's size -------------------------------------------------------
# tests/hostile_review7/refusal_sized.py on free_count_not_incremented: an engine whose pool is of no size a directed
# program names (the public programs' llm_init sizes, hard-coded) is a second opinion's, and refuses every create.
# fresh_pool.witness_pool replays the program over its own size plus two blocks a block its calls can take, a size no
# directed program names here, so the refusal reads as create_free's. Graded on llm_init (6), free_count (5) and
# create_free weighed 2, as review 6's refusal_pool_file: the free count's bug is honest 8/13 (review 5's control),
# the witness fooled gives 11/13.
REFUSAL_ITEMS = ("llm_init", "free_count", "create_free")
REFUSAL_HONEST, REFUSAL_MAX = 8, 13
SIZE_BROKEN = (
    "refused_for_want_of_blocks replays the program over a pool larger than any directed program's (witness_pool), "
    "and the directed programs' sizes are public and few: an engine on a pool of another size knows itself a "
    "second opinion and refuses there, so its refusal is charged to create_free and not to free_count. Fix by "
    "construction: a witness whose calls are a graded run's, the pool too (the same program over its own pool, "
    "asked where its engine's free count stands, e.g. the refused call after a free of a sequence of the model's "
    "that frees exactly the blocks the call needs), or the refusal charged to both rules' items where no such "
    "witness decides")


def test_the_free_count_bug_alone_gets_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    """The control of attack 5: free_count_not_incremented alone, graded the same way."""
    problems = _python_problems(scene, reaper, "free_count_not_incremented", "", REFUSAL_ITEMS, "create_free",
                                REFUSAL_HONEST, REFUSAL_MAX)
    assert not problems, "\n".join([f"free_count_not_incremented (honest {REFUSAL_HONEST}/{REFUSAL_MAX}):", *problems])


# held since a refusal's rule is decided by graded runs only (oracle/hw3/refusal_rule.py, no bigger-pool second
# opinion): SIZE_BROKEN is what broke before
@pytest.mark.bwrap_repeat  # graded runs decide the rule, in both
def test_a_refusals_second_opinion_cannot_be_told_by_its_pool_size(scene: Scene, reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "free_count_not_incremented", "refusal_sized", REFUSAL_ITEMS,
                                "create_free", REFUSAL_HONEST, REFUSAL_MAX)
    assert not problems, "\n".join([f"refusal_sized (honest score {REFUSAL_HONEST}/{REFUSAL_MAX}):", *problems])


# --- 6. a bug hidden behind a memory error the fence still ends a graded run for --------------------------------------
# tests/submissions/hostile/review7/heap_error_hides.patch on broken/tail_insertion.patch (a create inserts at the head
# of the active list): where the list already holds a sequence (where the head insertion shows), create_sequence first
# reallocs a block it freed, which driver.c's realloc ends the run for (heap_fatal, "a heap found corrupted"). The rules
# charge such a crash to memory_safety (rules.HEAP_SMASHED, whatever the call), and every item reads past it: the head
# insertion is never seen. The control, heap_error_at_destroy.patch, makes the same memory error in llm_destroy,
# where it hides nothing: two bugs, tail_insertion's and memory_safety's. Graded on compiles (5), create_free (10),
# tail_insertion (3) and memory_safety (10): honest 15/28.
HIDE_ITEMS = ("compiles", "create_free", "tail_insertion", "memory_safety")
HIDE_HONEST = 15
HIDDEN_BROKEN = (
    "a graded run that ends in heap_fatal on the fence (a realloc or malloc_usable_size of a pointer that is no live "
    "block, a 65th stray page in a call) is a crash the rules charge to memory_safety (HEAP_SMASHED) and every item "
    "reads past, passing on the calls before it: a submission that fails memory_safety anyway ends each run just "
    "before its other bugs show, at no further cost. Fix by construction, as for the probes: on the fence no memory "
    "error need end a run (each is caught at the access that makes it, never found later in a heap it corrupted): a "
    "realloc or malloc_usable_size of a non-live pointer counted as a stray as its free is, and past 64 stray pages a "
    "call a sink page counted once more, so the run goes on and every item sees its own calls")


def test_a_memory_error_that_hides_nothing_costs_memory_safety_and_leaves_the_other_bug_seen(scene: Scene,
                                                                                             reaper: Reaper) -> None:
    """The control of attack 6: the same memory error in llm_destroy, tail_insertion's bug seen as ever."""
    problems = _c_problems(scene, reaper, "tail_insertion", "heap_error_at_destroy", HIDE_ITEMS, HIDE_HONEST)
    assert not problems, "\n".join([f"heap_error_at_destroy (honest score {HIDE_HONEST}/{max_points(HIDE_ITEMS)}):",
                                    *problems])


# held since on the fence no memory error ends a run (heap-nonfatal): HIDDEN_BROKEN is what broke before
@pytest.mark.bwrap_repeat  # the fence and the ledger, in both
def test_a_memory_error_that_ends_a_graded_run_does_not_hide_the_next_bug(scene: Scene, reaper: Reaper) -> None:
    problems = _c_problems(scene, reaper, "tail_insertion", "heap_error_hides", HIDE_ITEMS, HIDE_HONEST)
    assert not problems, "\n".join([f"heap_error_hides (honest score {HIDE_HONEST}/{max_points(HIDE_ITEMS)}):",
                                    *problems])



def test_every_review7_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["drain_regranted", "floor_at_least_one", "floor_told_by_output", "forged_heap_reply",
                              "fork_kept_for_free", "fork_told_by_output", "grader_environ", "heap_error_at_destroy",
                              "heap_error_hides", "malloc_twice", "realloc_in_probe", "refusal_sized",
                              "runaway_in_probe"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"review7/{name}" in table for name in on_disk)
