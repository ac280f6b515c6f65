"""Tamper suite, the tenth adversarial review's attacks (issue 17, round 10): hostile submissions written by a
reviewer who had not seen the defences being built, each on top of a known bug and aimed
at an area the nine rounds before attacked least (the heap ledger's budget and alloc_failure's injection, the
refusal rule, the student's text). The table of what each does and how it fared:
tests/hostile_review10/README.md.

Same shape as tests/test_tamper_review9.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. An attack that breaks the grader is a strict xfail naming the
mechanism and a fix by construction; one that holds is a plain test saying why.
"""

import shutil
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import SUBMISSIONS
from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_submission, graded_problems, python_submission, reaper  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review10"
PY_ATTACKS = Path(__file__).with_name("hostile_review10")


def _c_problems(tmp_path: Path, reaper: Reaper, without_bwrap: bool, base: str, attack: str,
                items: tuple[str, ...], weighed: str, weight: int, honest: int, full: int,
                under: tuple[Path, ...] = ()) -> list[str]:
    """tests/submissions/hostile/review10/<attack>.patch on broken/<base>.patch (and the patches `under`, applied
    in turn between them), graded on `items` with `weighed` worth `weight`: what its grade got that the honest score
    does not allow."""
    with closing(Scene(tmp_path, without_bwrap=without_bwrap)) as scene:
        sub = c_submission(scene, base, C_ATTACKS / f"{attack}.patch", under)
        return graded_problems(scene, reaper, sub, items, honest, full, {weighed: weight})


# --- 1. the heap budget filled, so the ledger never injects a failure (ledger.py _grant, alloc_failure.py) ----------
# tests/submissions/hostile/review10/budget_filled.patch on broken/alloc_failure.patch (create_sequence returns NULL
# and leaks what it built when an L2 table cannot be had). llm_init callocs a reserve of 65,534 pages: with the engine
# and its ref counts (a page each) exactly the ledger's budget (a quarter of the driver's 1 GiB address-space limit),
# on fresh pages never touched, so it costs no memory; llm_destroy frees it. Every later grant asks for more than the
# budget leaves: the ledger answers FULL (EDQUOT) before it counts down to the failure it injects, the driver serves
# the block from the C library, and with the ledger installed driver.c's injected_failure() never fails one either.
# No allocation of any try is failed, so every try passes ("17 allocations failed one at a time"). Graded on compiles
# (5) and alloc_failure weighed 5, as review 7's malloc_twice: honest 5/10 (test_tamper_review7's control).
ALLOC_ITEMS = ("compiles", "alloc_failure")
ALLOC_HONEST, ALLOC_MAX = 5, 10
BUDGET_BROKEN = (
    "the ledger checks its budget before its failure countdown (ledger.py _grant): a submission that keeps a block "
    "as large as the budget live (calloc'd, never touched: no memory) makes every later grant FULL, served by the C "
    "library, which with the ledger installed the driver never fails (injected_failure), so no allocation of any try "
    "is failed and alloc_failure passes on its own bug (10/10 for the honest 5/10), saying it failed 17. Fix by "
    "construction: every allocation reaches the ledger as a grant request while the fence is on (fence_alloc asks "
    "before any fallback), so the countdown runs first on every request, whatever the answer would be: the k-th "
    "request fails ENOMEM and so does every later one of the call, FULL or not; a try whose failure the ledger did "
    "not inject is a grader error, never a pass")


# Held since budget-first: the ledger's countdown runs before its budget, on every request for a fresh place
# (ledger._grant), the driver asks the fence first for every allocation (a C library block's realloc too) and never
# gives up on a place for want of one; a try passes only on a failure the ledger made (alloc_failure._inject).
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the grader's own ledger decides, in both isolations
def test_a_budget_filled_by_one_reserve_still_has_its_allocations_failed(without_bwrap: bool, tmp_path: Path,
                                                                         reaper: Reaper) -> None:
    problems = _c_problems(tmp_path, reaper, without_bwrap, "alloc_failure", "budget_filled", ALLOC_ITEMS,
                           "alloc_failure", 5, ALLOC_HONEST, ALLOC_MAX)
    assert not problems, "\n".join([f"budget_filled (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])



# --- 1b. a spare freed between two asks (ledger.py _grant's persistent failure, alloc_failure.py) -------------------
# tests/submissions/hostile/review10/freed_then_asked.patch on broken/alloc_failure.patch: review 7's malloc_twice asked
# malloc again on NULL; this one first frees a spare block llm_init took (memory that ran out comes back when something
# is freed, on an ordinary heap) and then asks again. The control and the honest score: as attack 1.


# held: from the k-th grant of a call on, every grant of the call fails (ledger.py `injected`), a free in between
# changes nothing, so the second ask meets NULL and the leaking path is reached: 5/10, bwrap and fallback
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the grader's own ledger decides, in both isolations
def test_a_spare_freed_before_asking_again_still_meets_the_failure(without_bwrap: bool, tmp_path: Path,
                                                                    reaper: Reaper) -> None:
    problems = _c_problems(tmp_path, reaper, without_bwrap, "alloc_failure", "freed_then_asked", ALLOC_ITEMS,
                           "alloc_failure", 5, ALLOC_HONEST, ALLOC_MAX)
    assert not problems, "\n".join([f"freed_then_asked (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])

# --- 2. the same budget filled to hide an overread (ledger.py _grant, stray_charge.py, memory_safety.py) -----------
# tests/submissions/hostile/review10/overread_past_budget.patch on broken/memory_safety.patch (freeing a block table
# reads l2[16]): llm_init fills the ledger's budget (a quarter of the address-space limit getrlimit reports) with
# untouched calloc'd blocks of halving sizes, kept while the fence grants them (at or above 0x200000000000), so every
# later block comes from the C library, where no guard page follows it; under valgrind (vgpreload in /proc/self/maps)
# nothing is reserved and the loop stops at l2[15]. The graded runs then see no stray access. Graded on compiles (5)
# and memory_safety (10): honest 5/15.
MEMORY_ITEMS = ("compiles", "memory_safety")
MEMORY_HONEST, MEMORY_MAX = 5, 15


OVERREAD_BROKEN = (
    "a block the fence cannot hold (its budget spent) is served by the C library, where no guard page follows it: a "
    "submission that fills the ledger's budget with untouched blocks (calloc: no memory; a quarter of the "
    "address-space limit getrlimit reports) has every later block off the fence, in every native run, the battery's "
    "included, so its overread of l2[16] faults nowhere, and it stops the read under valgrind (vgpreload in "
    "/proc/self/maps): memory_safety passes on its own bug (15/15 for the honest 5/15). Fix by construction: a block "
    "the fence cannot hold is refused (NULL, as memory that ran out, the same on every machine), never served where "
    "no guard page follows it; or the budget counts only what a block asks (calloc'd pages never touched count), so "
    "no budget a run can fill without memory is left")


# Held since fence-only: natively no block comes from the C library; a block the fence cannot hold fails (NULL, as
# memory that ran out), so the reserve leaves every later block NULL and memory_safety fails all the same.
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the grader's own ledger and battery decide, in both isolations
def test_an_overread_past_a_filled_budget_is_still_charged_to_memory_safety(without_bwrap: bool, tmp_path: Path,
                                                                       reaper: Reaper) -> None:
    problems = _c_problems(tmp_path, reaper, without_bwrap, "memory_safety", "overread_past_budget", MEMORY_ITEMS,
                           "memory_safety", 10, MEMORY_HONEST, MEMORY_MAX)
    assert not problems, "\n".join([f"overread_past_budget (honest score {MEMORY_HONEST}/{MEMORY_MAX}):", *problems])


# --- 3. the ledger spent on purpose, so a mapping reached by address is the driver's own (ledger.py answer) --------
# tests/submissions/hostile/review10/ledger_spent.patch on broken/llm_destroy.patch (llm_destroy frees each sequence's
# tables but not the Sequence) and review 2's leak_by_computed_mmap (each Sequence mapped by libc's mmap reached by
# address: held since the ledger counts a mapping outside the span not made from the driver's own system-call
# instruction as a live block). llm_init first asks malloc for 2^38 bytes (a volatile pointer, so gcc keeps it): the
# fence asks the ledger, which answers FULL and is `spent` for the rest of the run, and from then on takes every
# mapping call for the driver's or the C library's (`own = site == driver_site or spent`); the C library then fails
# the block under the address-space limit, so no memory is used. Under valgrind (vgpreload) it does nothing: valgrind
# counts no mapping as a leak. Graded on compiles (5), llm_destroy (6) and memory_safety (10): honest 5/21, as review
# 2's attack, which held.
LEAK_ITEMS = ("compiles", "llm_destroy", "memory_safety")
LEAK_HONEST, LEAK_MAX = 5, 21
SPENT_BROKEN = (
    "once the ledger has answered FULL it takes every mapping call of the run for the driver's own or the C "
    "library's heap's (ledger.py: own = site == driver_site or spent), and one malloc larger than the budget makes it "
    "answer FULL, at no memory (the C library then fails it): a mapping the submission makes outside the span by "
    "libc's mmap reached by address is no longer a live block, so the Sequences llm_destroy leaks are not seen "
    "natively, and valgrind counts no mapping (21/21 for the honest 5/21). Fix by construction: spent lets only what "
    "the C library's heap needs (brk, and mmap from the C library's own call sites, known before any submission code "
    "runs as the driver's is) and a block larger than the budget is refused (NULL) without spending anything; every "
    "other mapping outside the span stays a live block of the call")


# Held since fence-only: no answer changes how the ledger takes a later call (no `spent`): the 2^38-byte malloc fails
# (NULL) and spends nothing, and every mapping outside the span not made from the driver's own instruction stays a live
# block of the submission's.
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the grader's own ledger decides, in both isolations
def test_a_ledger_spent_on_purpose_still_counts_a_mapping_reached_by_address(without_bwrap: bool, tmp_path: Path,
                                                                             reaper: Reaper) -> None:
    problems = _c_problems(tmp_path, reaper, without_bwrap, "llm_destroy", "ledger_spent", LEAK_ITEMS,
                           "memory_safety", 10, LEAK_HONEST, LEAK_MAX,
                           under=(SUBMISSIONS / "hostile" / "review2" / "leak_by_computed_mmap.patch",))
    assert not problems, "\n".join([f"ledger_spent (honest score {LEAK_HONEST}/{LEAK_MAX}):", *problems])


# --- 4. a create refusal planted where the refusal rule looks (oracle/hw3/refusal_rule.py, settlement.py) -----------
# tests/hostile_review10/refusal_planted.py on free_count_not_incremented: the refusal rule asks create_free's programs,
# run as graded, whether a create is refused before any call moved the free count; this engine refuses exactly one
# such create (create_sequence_cap's 4096 records on a fresh engine), so every refusal the free count's bug makes
# reads as create_free's. Graded on llm_init (6), free_count (5) and create_free weighed 2, as reviews 5-7's refusal
# attacks: the free count's bug is honest 8/13 (review 7's control); the attack won where create_free's failure
# excused free_count's (6 + 5 + 0 = 11/13). Measured before refusal-call: 11/13 (bwrap and fallback); with the fuzz item added (10),
# 11/23 for the honest 8/23: the fuzz's refusal reads the same way. With the default weights (create_free 10) the
# plant costs the student: 11/21 for the honest 16/21.
REFUSAL_ITEMS = ("llm_init", "free_count", "create_free")
REFUSAL_HONEST, REFUSAL_MAX = 8, 13
# what the planted engine is worth: its two bugs, each charged once (the plant create_free's 2, the count free_count's 5)
PLANTED_SCORE = REFUSAL_HONEST - 2


def _python_problems(tmp_path: Path, reaper: Reaper, without_bwrap: bool, base: str, attack: str,
                     items: tuple[str, ...], weighed: str, weight: int, honest: int, full: int,
                     keep: Path | None = None) -> list[str]:
    """tests/hostile_review10/<attack>.py on the broken variant `base`, graded on `items` with `weighed` worth
    `weight`: what its grade got that the honest score does not allow. The module's name is drawn afresh; `keep`: a
    folder the reports are copied to before the scene is removed."""
    with closing(Scene(tmp_path, without_bwrap=without_bwrap)) as scene:
        sub = python_submission(scene, "review10", base, PY_ATTACKS / f"{attack}.py")
        problems = graded_problems(scene, reaper, sub, items, honest, full, {weighed: weight})
        if keep is not None:
            shutil.copytree(scene.out, keep)
        return problems


PLANTED_BROKEN = (
    "refuses_alone asks whether create_free's programs show any create refused before the count moved, not the "
    "refused call: one planted refusal of another create (create_sequence_cap's 4096 records on a fresh engine) makes "
    "every later refusal of the free count's bug create_free's, so create_free fails once for both bugs and free_count "
    "passes excused: 11/13 for the honest 8/13 where a course weighs create_free below free_count (measured, bwrap "
    "and fallback; create_free's failure named at create_sequence.txt step 20, the free count's refusal). Fix by "
    "construction: a refusal after the count moved is the create's own only where the create's programs show that "
    "call (the same records on a pool it fits) refused before any move; where two rules may each have made it, both "
    "items are charged (each once), so a cheap planted failure pays for no dearer bug")


# Held since refusal-call: a refusal after calls that moved the count is the create's own only where create_free's
# programs show that call (as many records) refused alone (refusal_rule.py same_call); the plant refused 4096 records,
# the count's bug refuses free_count.txt's 160 (and others), which stay the free count's: create_free fails for the
# plant at create_sequence_cap step 3, free_count at free_count step 11, each once: 6/13 (measured, bwrap and
# fallback); default weights 6/21, with fuzz 6/23 (the honest scores less the plant's create_free; fallback).
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # graded runs alone decide, in both isolations
def test_a_create_refusal_planted_where_the_refusal_rule_looks_costs_the_free_count_still(
        without_bwrap: bool, tmp_path: Path, reaper: Reaper) -> None:
    problems = _python_problems(tmp_path, reaper, without_bwrap, "free_count_not_incremented", "refusal_planted",
                                REFUSAL_ITEMS, "create_free", 2, PLANTED_SCORE, REFUSAL_MAX)
    assert not problems, "\n".join([f"refusal_planted (honest score {REFUSAL_HONEST}/{REFUSAL_MAX}, its two bugs "
                                     f"{PLANTED_SCORE}/{REFUSAL_MAX}):", *problems])


# --- 5. an exception's text in the hw3 family's words for a student (oracle/hw3/feedback.py, markdown.py) ----------
# tests/hostile_review10/crash_said_in_markdown.py on destroy_returns_minus_one: where the bug returns -1, llm_destroy
# raises an exception whose text is Markdown (a heading, an image of an address of its choosing, an open fence).
# Review 3a closed this for the blockspace and prefix families (a failed item's message goes into a fenced block);
# the hw3 family writes its own student text (student_text), whose first line quotes a crash's words inline. Graded on
# create_free (10) and llm_destroy (6): honest 10/16; the score holds, the words must stay inside a code block.
CRASH_ITEMS = ("create_free", "llm_destroy")
CRASH_HONEST, CRASH_MAX = 10, 16
CRASH_WORDS_BROKEN = (
    "the hw3 family's text for a student (oracle/hw3/feedback.py student_text, what_went_wrong) puts a crash's words "
    "inline: \"it did not return normally: raised RuntimeError: <the exception's text>\", and a Python submission "
    "chooses that text whole (multi-line, up to the reply's bound): results.json (output_format md) then shows a "
    "heading of the submission's, an image fetched from its address when a student or a TA views the page, and an "
    "open fence that swallows the grader's own words after it (measured: bwrap and fallback). The same words reach it "
    "as a return value: an llm_destroy returning that text as a str is read as a reply (\"it returned <text>, "
    "expected 0.\", measured on the same bug under bubblewrap). Fix by construction: "
    "what_went_wrong is made of the grader's words only, and whatever the implementation said (an exception's "
    "text, a driver's message) goes into its own fenced block (oracle/markdown.py fenced), as the blockspace and "
    "prefix families' items do since review 3a; better, a Difference's `got` carries the submission's text apart "
    "from the grader's words, so no family can inline it")


# held since student-md (the grader's words apart from the submission's: oracle/markdown.py spoken/said,
# oracle/hw3/feedback.py went_wrong); CRASH_WORDS_BROKEN kept as the record of what was broken
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the grader's own text, in both isolations
def test_words_a_python_crash_chose_stay_inside_a_code_block(without_bwrap: bool, tmp_path: Path,
                                                             reaper: Reaper) -> None:
    """Every line of results.json's Markdown holding the attack's mark lies inside a fenced code block; the grade is
    the honest one."""
    import json

    from tests.test_tamper_review2 import _outside_code

    problems = _python_problems(tmp_path, reaper, without_bwrap, "destroy_returns_minus_one",
                                "crash_said_in_markdown", CRASH_ITEMS, "llm_destroy", 6, CRASH_HONEST, CRASH_MAX,
                                keep=tmp_path / "kept")
    results = json.loads((tmp_path / "kept" / "results.json").read_text())
    problems += [f"item {t['name']!r}: the submission's words are Markdown, outside any code block"
                 for t in results["tests"] if t.get("output_format", results.get("output_format")) == "md"
                 and _outside_code(t["output"], "REVIEW10")]
    assert not problems, "\n".join(["crash_said_in_markdown:", *problems])


def test_every_review10_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["budget_filled", "crash_said_in_markdown", "freed_then_asked", "ledger_spent",
                              "overread_past_budget", "refusal_planted"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review10/{name}" in table for name in on_disk)
