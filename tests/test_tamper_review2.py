"""Tamper suite, the second adversarial review's attacks (issue 17, round 2): hostile submissions written
against the design of trust-c-probes, trust-c-alloc and trust-python (the heap read from outside, the electric
fence, the probes' outside reading, Python's grader-owned evidence), with and without bubblewrap.

Same shape as tests/test_tamper_review.py: each attack sits on a known bug (C: tests/submissions/broken/<base>.patch,
then tests/submissions/hostile/review2/<attack>.patch; Python: engine/llm_memory.py with tests/broken/<base>.patch's
calls, then tests/hostile_review2/<attack>.py), is graded by a separate `pagedcheck` process in a world of its
own on the items it concerns, and must get no more than the bug's honest score, leave no process, change no file
outside the scratch, and the grader must write its report. An attack that breaks the grader today is a strict
xfail naming the mechanism that let it through.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import Reaper, Scene
from tests.tamper_grading import (c_submission, check_report, grade_args, grade_in_scene, python_module,  # noqa: F401
                                  python_submission, reaper, scene)
from tests.test_grade import small_rubric
from tests.test_tamper_review import Attack, graded

C_ATTACKS = SUBMISSIONS / "hostile" / "review2"
CORRECT = SUBMISSIONS / "correct_review2"  # correct implementations written in unusual ways: patches on the reference
PY_ATTACKS = Path(__file__).with_name("hostile_review2")


ATTACKS = [
    # honest 5 (compiles): llm_destroy leaks each Sequence (3 blocks natively; valgrind: 1 block lost)
    # held: the leaked blocks' pages made PROT_NONE by a computed mprotect are not a free the ledger counts
    # (ledger.py: a free is exactly one granted block made inaccessible, and the grader also takes the
    # process's count where larger), and valgrind finds the blocks the native run did not show
    Attack("hidden_leak_mprotect", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
    # honest 5 (compiles): freeing a table reads l2[16], natively on the guard page after the L2 table
    # held since the ledger (issue 17): the computed mprotect that makes the guard page readable is a system call
    # the kernel hands to the grader, which counts a page of the heap's span made accessible outside a grant as
    # a stray access (a memory error), whoever asked for it
    Attack("hidden_overread_mprotect", "c", "memory_safety", ("compiles", "memory_safety"), 5),
    # honest 5 (compiles): a failing create_sequence allocates its Sequence and L1 table before the check
    # held since the ledger: a call's allocations are the grants the grader answered during it, never the
    # driver's counters (driver.c's static `heap`, which the attack rewrites through /proc/self/exe's .symtab)
    Attack("counters_restored", "c", "check_before_allocate", ("compiles", "check_before_allocate"), 5),
    # honest: alloc_failure (0 points, reported) fails: a failed L2 allocation leaks the half-built Sequence
    # held since the ledger: the grader fails the k-th grant itself (ENOMEM) and knows it did; the driver's
    # fail_countdown, which the attack zeroes, is not used where the ledger runs
    Attack("injection_disarmed", "c", "alloc_failure", ("compiles", "alloc_failure"), 5, failing=("alloc_failure",)),
    # honest 5 (compiles): free_sequence zeroes every block whose ref_count drops to 0
    # held by construction: there is no shadow any more. The pool is a window on the grader's memory file, which
    # the driver only maps (shared); after each call the grader reads the window from its own file and compares
    # it with its own previous reading (adapter.py's observe). Whatever the attack finds of the driver's `pool`
    # record, nothing it writes there is what the grader reads: the scrub shows.
    Attack("shadow_scrubbed", "c", "free_scrubs_blocks", ("compiles", "no_premature_writes"), 5),
    # honest 5 (compiles): free_sequence unlinks the Sequence after freeing it
    # held since the ledger: no page of the heap's span is granted twice in a run (ledger.py refuses it, and the
    # driver never asks), so the churn never gets the freed address back; the stray unlink faults (or the churn
    # runs out the call's time, charged to the battery program: memory_safety is not passed)
    Attack("uaf_after_reuse", "c", "use_after_free", ("compiles", "memory_safety"), 5),
    # held since memory_safety runs its battery natively twice (issue 17): blocks at their last page's end,
    # then at their first page's start, so l2[-1] lies on the unmapped page in front of the L2 table in the
    # second run. A program that tests its pointers' page offsets could still keep such a read to the layout
    # where it is unseen: oracle/hw3/c/README.md says so
    Attack("underread_in_page", "c", "memory_safety", ("compiles", "memory_safety"), 5),
]
LEDGER_BLIND = (
    "the ledger (oracle/native/ledger.py) let {how}: the Sequences llm_destroy leaks were no heap blocks to the "
    "grader, 15/15 for an honest 5/15")
ATTACKS += [
    # honest 5 (compiles), as hidden_leak_mprotect: each held since the ledger refuses memory reached behind the
    # heap's count (outside the span, from wherever the call is made since driver-pages; brk) for the whole run
    # (since fence-only: once until it said the fence is full), and the driver takes the C library's heap's room
    # before the handover. Each finds the C library's file by the loader's link map (ld.so's _r_debug) since
    # proc-mem, which left a native run no /proc/self/maps to read (before: by those maps, where the system's path
    # was not in view)
    Attack("leak_by_computed_mmap", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
    Attack("leak_by_libc_malloc", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
    # held since, with the ledger, only its answer made the driver serve a block from the C library; since fence-only
    # none is served there natively: the driver's records can only make a block fail
    Attack("fence_full_forged", "c", "llm_destroy", ("compiles", "llm_destroy", "memory_safety"), 5),
]
ATTACKS += [
    # held since the grader reads none of a Python engine's objects (oracle/hw3/unread.py): the property says
    # what it likes to a reader that never comes (it scored 11/11 for an honest 6/11). free_count judges the
    # bug where the grader sees it, in create_sequence's refusals that more free blocks undo (a second opinion
    # in a process of its own, fresh_pool.refused_for_want_of_blocks): 6/11, honest and attacked alike
    Attack("free_count_said_to_reader", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
    # held likewise: the list is relinked for a reader that never comes, and its order shows in no return value
    # and no pool byte, so tail_insertion is not graded for Python and fuzz compares what the calls return and
    # the pool: 16/16, honest and attacked alike (once 19/19 for an honest 6/19)
    Attack("order_said_to_reader", "python", "create_at_head", ("llm_init", "tail_insertion", "fuzz"), 16),
]
BY_NAME = {attack.name: attack for attack in ATTACKS}


def submission(scene: Scene, attack: Attack) -> Path:
    """Writes the attack's submission into the scene; what `pagedcheck grade` is given."""
    if attack.lang == "python":
        return python_submission(scene, "review2", attack.base, PY_ATTACKS / f"{attack.name}.py")
    return c_submission(scene, attack.base, C_ATTACKS / f"{attack.name}.patch")


HONEST = [("python", "free_count_not_incremented", ("llm_init", "free_count"), 6),
          ("python", "create_at_head", ("llm_init", "tail_insertion", "fuzz"), 16)]  # the C bases: test_tamper_review's
# HONEST and the figures in each attack's comment (measured with `pagedcheck grade` on the bug alone)


@pytest.mark.parametrize("lang, base, items, honest", HONEST, ids=[f"{lang}-{base}" for lang, base, _, _ in HONEST])
def test_each_python_base_scores_its_honest_score(lang: str, base: str, items: tuple[str, ...], honest: int,
                                                  scene: Scene, reaper: Reaper) -> None:
    (scene.mods / "review2_attack.py").write_text(scene.fill(python_module(base, "")))
    problems = graded(scene, reaper, Path("review2_attack"), items, honest, 2.0, lang)
    assert not problems, "\n".join(problems)


# each held by the grader's own reading of the evidence (the ledger, the pool it reads back, Python's answers), the
# same in both isolations: CI grades it without bubblewrap, the long profile with it too (tests/conftest.py)
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("name", [pytest.param(a.name, marks=pytest.mark.xfail(strict=True, reason=a.broken))
                                  if a.broken else a.name for a in ATTACKS])
def test_review2_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    problems = attack_problems(scene, reaper, attack, submission(scene, attack))
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


def attack_problems(scene: Scene, reaper: Reaper, attack: Attack, sub: Path) -> list[str]:
    """What an attack's grade got that its honest score does not allow; a 0-point item it fails honestly
    (`attack.failing`) is judged by its status (failed, or not run) and the exit status, which the score cannot show."""
    problems = graded(scene, reaper, sub, attack.items, attack.expected, attack.timeout, attack.lang)
    if attack.failing:  # a 0-point item: the score cannot show it, its status and the exit status do
        problems = [p for p in problems if not p.startswith("exit_status")]
        report = json.loads((scene.out / "report.json").read_text())
        # not passed: failed, or not run (alloc_failure past its bound of allocations a call, 0 points as a failure)
        problems += [f"item {i['id']} {i['status']} ({i['message'][:120]}), honestly failed or not run"
                     for i in report["items"] if i["id"] in attack.failing and i["status"] not in ("failed", "not_run")]
        if report["exit_status"] != 1:
            problems.append(f"exit_status {report['exit_status']}, honestly 1 (an item fails)")
    return problems


def test_every_review2_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")]
                     + ([p.stem for p in PY_ATTACKS.glob("*.py")] if PY_ATTACKS.is_dir() else []))
    assert on_disk == sorted([a.name for a in ATTACKS] + ["markdown_fence"])  # markdown_fence: its own test


@dataclass(frozen=True)
class Unusual:
    name: str  # CORRECT/<name>.patch, on the reference
    items: tuple[str, ...]
    broken: str = ""  # when the grader costs it points today: why (a strict xfail)
    options: tuple[str, ...] = ()  # more options of `pagedcheck grade`


UNUSUAL = [
    # held: a registry of every live sequence grown and shrunk by realloc one entry at a time, and a recursive
    # llm_destroy (100/100 on the whole rubric, small fuzz: measured)
    Unusual("realloc_recursive", ("compiles", "create_free", "fork", "llm_destroy", "memory_safety", "alloc_failure")),
    # four 16-byte bookkeeping records a sequence (a chain hung from a hidden 17th L1 slot): 7 blocks a one-block
    # sequence. Held: many_sequences' 5000 live one-block sequences at 7 blocks each are 35,002 live blocks with the
    # engine (tests/bench/heap_peak.py), under the fence's 56,314 (ledger.fence_blocks; past it a block fails, NULL,
    # since fence-only: once it came from the C library's heap)
    Unusual("small_records", ("compiles", "create_free")),
    # 8000 spare 32-byte records set aside by the first live engine, freed with the last. Once held by failing at most
    # 32 allocations of a call (a sample), which the fifth review broke (review5 sample_skipped); alloc_failure now
    # fails every allocation of every call in turn, up to MOST_PER_CALL a call, and llm_init's 8002 are more: the item
    # is not run (0 points by default; a course that weighs it costs this correct design its points). The other
    # items' slowness on it (the grader reads the driver's whole /proc/PID/maps after every call) is not this
    # test's: it grades only these two items, within a 60 s whole-grade limit
    Unusual("spare_records", ("compiles", "alloc_failure"), (
        "alloc_failure fails each allocation of a call in turn, replaying the program from a fresh driver each time, "
        "up to alloc_failure.MOST_PER_CALL (64) a call: llm_init's 8002 allocations (8000 spare records) are more, "
        "so the item is not run (0 points) for a correct design; every allocation tried would be 8002 replays of "
        "up to 8002 allocations each. No fix by construction is known: each try lets the call undo every allocation "
        "before the one failed, so trying them all is quadratic in a call's count; the bound is the price of trying "
        "every allocation of every smaller call (review5's sample_skipped)"),
            ("--time-limit", "60")),
]


@pytest.mark.parametrize("name", [pytest.param(u.name, marks=pytest.mark.xfail(strict=True, reason=u.broken))
                                  if u.broken else u.name for u in UNUSUAL])
def test_a_correct_unusual_implementation_gets_full_marks(name: str, scene: Scene, reaper: Reaper) -> None:
    unusual = next(u for u in UNUSUAL if u.name == name)
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), CORRECT / f"{name}.patch"))
    from tests.tamper_grading import max_points

    full = max_points(unusual.items)
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(unusual.items))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, 2.0, unusual.options))
    problems = evidence.problems + check_report(scene.out, full, full)
    if evidence.ran.status != 0:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}: {evidence.ran.stderr[-300:]}")
    assert not problems, "\n".join([f"{name} (correct, full marks {full}):", *problems])


@pytest.mark.bwrap_repeat  # the grader's own text
def test_what_the_code_printed_stays_inside_its_code_block(scene: Scene, reaper: Reaper) -> None:
    """markdown_fence (on append_cow, honest 10 here) prints ``` then ~~~~ then a marked line: in results.json
    every line holding the mark must lie inside a fenced code block, as CommonMark reads the fences."""
    attack = Attack("markdown_fence", "c", "append_cow", ("compiles", "null_engine", "append_cow"), 10)
    problems = graded(scene, reaper, submission(scene, attack), attack.items, attack.expected, attack.timeout)
    results = json.loads((scene.out / "results.json").read_text())
    shown = [t["name"] for t in results["tests"] if t.get("output_format") == "md" and _outside_code(t["output"], "REVIEW2")]
    problems += [f"item {name!r}: the submission's printed line is Markdown, outside any code block" for name in shown]
    assert not problems, "\n".join(problems)


def _outside_code(markdown: str, mark: str) -> bool:
    """Whether a line holding `mark` lies outside every fenced code block (CommonMark: a fence of 3+ ` or ~,
    closed by a line of the same character at least as long)."""
    fence: tuple[str, int] | None = None
    for line in markdown.splitlines():
        opened = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence is None and opened:
            fence = (opened.group(1)[0], len(opened.group(1)))
        elif fence is not None and (closed := re.match(r" {0,3}(`{3,}|~{3,})\s*$", line)) \
                and closed.group(1)[0] == fence[0] and len(closed.group(1)) >= fence[1]:
            fence = None
        elif fence is None and mark in line:
            return True
    return False
