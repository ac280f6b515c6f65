"""Tamper suite 2, C (issue 17, classes 1 and 2): attacks on the evidence memory_safety and the heap items
rest on. Each is a patch (tests/submissions/hostile/tamper2/<attack>.patch) on top of a known bug, graded by a
separate `pagedcheck` process in a world of its own (tests/tamper.py), with bubblewrap and with bubblewrap made
unavailable (a failing `bwrap` first on PATH), and must score no more than its bug's honest score, leave no
process, change no file outside its scratch, and let the grader write its report."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import Reaper, Scene, compile_grader
from tests.test_grade import small_rubric
from tests.tamper_grading import check_report, grade_args, grade_in_scene, max_points

ATTACKS = SUBMISSIONS / "hostile" / "tamper2"
LEAK_ITEMS = ("compiles", "llm_destroy", "memory_safety")  # llm_destroy's honest score there: compiles only (5)
MEMORY_ITEMS = ("compiles", "memory_safety")  # use_after_free's honest score there: compiles only (5)


@dataclass(frozen=True)
class Attack:
    name: str
    base: str
    items: tuple[str, ...]
    honest: int  # the base bug's honest score on `items`
    expected: int  # what the attack earns: never more than `honest`
    why: str


REFUSED = "refused at build with its reason: compiles fails, and nothing else runs"
ATTACKS_C2 = [
    Attack("strdup_leak", "llm_destroy", LEAK_ITEMS, 5, 5, "the driver's malloc counts what the C library allocates: "
           "the leak fails llm_destroy, and valgrind's leak check with no engine counts the reachable Sequences"),
    Attack("raw_mmap", "llm_destroy", LEAK_ITEMS, 5, 0, REFUSED + " (a syscall instruction)"),
    Attack("client_request", "use_after_free", MEMORY_ITEMS, 5, 0, REFUSED + " (valgrind's preamble)"),
    Attack("log_truncate", "use_after_free", MEMORY_ITEMS, 5, 0, "valgrind's log is a socket whose descriptor the "
           "driver closes before any submission code: nothing to truncate, the use after free is reported (and its "
           "ftruncate is undeclared under -std=c11, so compiles fails too)"),
    Attack("write_counters", "llm_destroy", LEAK_ITEMS, 5, 5, "the driver's counters say nothing is left, but "
           "the live blocks are read from the driver's mappings, outside the process: the Sequences' pages are "
           "still there, so llm_destroy and memory_safety fail on the leak"),
    # (added with the electric fence; each scored full marks on main before it: 21 and 15)
    Attack("hidden_leak_native", "llm_destroy", LEAK_ITEMS, 5, 5, "natively it leaks and zeroes the driver's "
           "counters, under valgrind (spotted from where malloc's blocks lie) it frees: the live blocks are read "
           "from the driver's mappings, so the native leak fails llm_destroy and memory_safety"),
    Attack("native_only_use_after_free", "use_after_free", MEMORY_ITEMS, 5, 5, "the use after free is made only "
           "natively (valgrind spotted from where malloc's blocks lie): natively a freed block's pages are "
           "inaccessible, so free_sequence faults there and memory_safety fails on it"),
    Attack("fake_unmapped_reply", "int_block_offset", ("compiles", "big_pool"), 5, 5, "the grader maps the pool "
           "itself: the driver's \"not mapped\" is the submission's failure, not a machine that cannot run the probe"),
    Attack("valgrind_maps_dodge", "use_after_free", MEMORY_ITEMS, 5, 5, "under valgrind its programs stop at a "
           "return value the native run does not give: it behaves differently under valgrind, which fails memory_safety"),
    Attack("forged_probe_reply", "l1_traversal", ("compiles", "l1_traversal"), 5, 5, "the grader reads the "
           "submission's counters, ref_count and block tables itself, from outside its process (c/outside.py): what "
           "the driver's pipe says about them is not read, so the blocks the buggy free kept are seen"),
    Attack("valgrind_hang", "use_after_free", MEMORY_ITEMS, 5, 5, "the hang happens under valgrind only: the program "
           "behaves differently under valgrind than natively, which fails memory_safety"),
]
BY_NAME = {attack.name: attack for attack in ATTACKS_C2}


@pytest.fixture(scope="module")
def reaper() -> Iterator[Reaper]:
    compile_grader()
    with Reaper() as r:
        yield r


def test_attack_table_names_every_patch_once() -> None:
    assert sorted(p.stem for p in ATTACKS.glob("*.patch")) == sorted(BY_NAME)
    for attack in ATTACKS_C2:
        assert attack.expected <= attack.honest
        base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{attack.base}.patch")
        assert patched(base, ATTACKS / f"{attack.name}.patch").startswith(
            f"/* Hostile test submission (tamper suite 2), on top of tests/submissions/broken/{attack.base}.patch: ")


# Every defence here is the grader's own reading of the evidence (the ledger, the driver's mappings read from outside,
# valgrind's run against the native one) or a refusal at build, the same in both isolations: CI runs each attack
# without bubblewrap, the long profile with it too (tests/conftest.py, bwrap_repeat)
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "no-bwrap"])
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_c_attack_on_the_evidence_scores_no_more_than_its_bug(name: str, without_bwrap: bool, tmp_path: Path,
                                                              reaper: Reaper) -> None:
    attack = BY_NAME[name]
    scene = Scene(tmp_path, without_bwrap=without_bwrap)
    try:
        sub = scene.root / "submission"
        sub.mkdir()
        base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{attack.base}.patch")
        (sub / "llm_memory.c").write_text(patched(base, ATTACKS / f"{attack.name}.patch"))
        rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(attack.items))
        evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
        problems = evidence.problems + check_report(scene.out, attack.expected, max_points(attack.items))
        assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])
    finally:
        scene.close()
