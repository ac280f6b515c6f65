"""Tamper suite, prefix family: stacked attacks (issue 17, class 6) graded by `pagedcheck grade --family prefix`.

Each submission is a folder the test writes: our engine (engine/prefix) copied as the package `labsol` with a
known bug of tests/broken_prefix/ applied, and a kv_cache.py whose KVCacheManager plants a second failure of
another rule, only where the known bug's item would show it (a free of a long request, or of a one-block one).
Before the settlement (oracle/grading/settlement.py) the item of the known bug read past the planted failure,
passed with a note, and the planted rule's item passed on its own programs: the plant bought the known bug's
points. Now the planted failure goes to its rule's item (oracle/prefix/rules.py), or, where the rubric leaves
that item out, back to the item that read past it: each attack scores no more than its known bug alone.

The promises are those of tests/test_tamper.py: the score, no process left, no file changed outside the
scratch, no secret in any report, no traceback, and the grader's own reports written; each attack also runs
where bubblewrap cannot start (a failing `bwrap` first on PATH).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from tests.tamper import Reaper, Scene
from tests.tamper_grading import (PLAIN_KV_CACHE, check_report, grade_in_scene, prefix_grade_args,  # noqa: F401
                                  prefix_rubric, prefix_submission, reaper)

WRAP = """from labsol import KVCacheManager as _Base, Request


class KVCacheManager(_Base):
    def free(self, request):
        blocks = list(self.req_to_blocks.get(request.request_id, []))
        super().free(request)
{plant}
"""


@dataclass(frozen=True)
class PrefixAttack:
    name: str
    base: str  # the known bug: tests/broken_prefix/<base>.patch
    items: tuple[str, ...]  # the rubric's items (8 points each)
    honest: int  # the known bug's score alone on these items
    plant: str  # the body that follows the honest free, in KVCacheManager.free
    why: str
    pays: str  # the item that fails for the planted failure, and the words that say why


LONG_FREE_LEAVES_A_HOLDER = """\
        if len(blocks) >= 4:  # the reverse-order program frees a 4-block request; the free queue's, one-block ones
            blocks[0].ref_cnt += 1
"""
ONE_BLOCK_FREE_HASHES_THE_NULL_BLOCK = """\
        if len(blocks) == 1 and blocks[0].block_hash is not None:  # only the free queue's program frees such
            self.block_pool.blocks[0].block_hash = blocks[0].block_hash
"""
ATTACKS = [
    PrefixAttack("forward_free_behind_a_ref_count", "forward_order_free", ("free_queue", "reverse_order_free"), 8,
                 LONG_FREE_LEAVES_A_HOLDER,
                 "a ref count left after a long free is free_queue's rule: it costs free_queue, not nothing",
                 "free_queue: ref count: block 1: expected 0 (the live tables holding it), got 1 [rule: free_queue] "
                 "(found by item reverse_order_free's programs, not this item's)"),
    PrefixAttack("forward_free_behind_an_ungraded_ref_count", "forward_order_free", ("reverse_order_free",), 0,
                 LONG_FREE_LEAVES_A_HOLDER,
                 "the rubric leaves free_queue out: the item that stopped at its failure takes it",
                 "reverse_order_free: ref count: block 1: expected 0 (the live tables holding it), got 1 "
                 "[rule: free_queue] (another rule's bug, but no item failed for it here)"),
    PrefixAttack("front_free_behind_a_hashed_null_block", "free_to_front_hashed", ("free_queue", "null_block"), 8,
                 ONE_BLOCK_FREE_HASHES_THE_NULL_BLOCK,
                 "a hashed null block is null_block's rule: it costs null_block, not nothing",
                 "null_block: null block: block 0: expected never free, held or hashed, got found in the hashed blocks "
                 "[rule: null_block] (found by item free_queue's programs, not this item's)"),
]
BY_NAME = {attack.name: attack for attack in ATTACKS}


def submission(folder: Path, base: str, plant: str | None) -> Path:
    """`folder` holding engine/prefix with the known bug as `labsol`, and kv_cache.py (with the plant, if any)."""
    return prefix_submission(folder, base, WRAP.format(plant=plant) if plant else PLAIN_KV_CACHE)


@pytest.fixture(params=[False, True], ids=["bubblewrap", "without_bwrap"])
def scene(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Scene]:
    world = Scene(tmp_path, without_bwrap=request.param)
    yield world
    world.close()


def graded(scene: Scene, reaper: Reaper, base: str, plant: str | None, items: tuple[str, ...],  # noqa: F811
           expected: int) -> list[str]:
    sub = submission(scene.mods / "student", base, plant)
    rubric = prefix_rubric(scene.rubric_dir / "rubric.toml", items)
    evidence = grade_in_scene(scene, reaper, prefix_grade_args(sub, scene, rubric))
    problems = evidence.problems + check_report(scene.out, expected, 8 * len(items))
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    return problems


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_known_bug_alone_scores_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    attack = BY_NAME[name]
    problems = graded(scene, reaper, attack.base, None, attack.items, attack.honest)
    assert not problems, "\n".join([f"{attack.base} alone on {attack.items}:", *problems])


@pytest.mark.bwrap_repeat  # the settlement's, whatever the isolation; the known bugs alone are graded in both
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_planted_failure_buys_no_points(name: str, scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    attack = BY_NAME[name]
    problems = graded(scene, reaper, attack.base, attack.plant, attack.items, attack.honest)
    assert not problems, "\n".join([f"{name} (expected {attack.honest}: {attack.why}):", *problems])
    report = json.loads((scene.out / "report.json").read_text())
    item, words = attack.pays.split(": ", 1)
    paid = next(i for i in report["items"] if i["id"] == item)
    assert paid["status"] == "failed" and paid["message"].endswith(words), paid
    assert report["isolation"].startswith("bubblewrap") != scene.without_bwrap, report["isolation"]
