"""The prefix family's directed items through oracle/grading/grader.py's run_checks and its settlement, in this
process (our engine with one planted behaviour, served by the lab adapter): a difference that stops an item's
program goes to its rule's item (oracle/prefix/rules.py), or back to the item when no item of that rule is
graded for this submission; a crash in a step it does not judge, which no rule owns, is the item's own once it
checked something. The whole grade, sandbox and all, is tests/test_tamper_prefix.py's."""

import sys
from pathlib import Path

import pytest

from oracle.grading.grader import run_checks
from oracle.grading.report import ItemResult
from oracle.grading.rubric import Rubric, RubricItem
from oracle.prefix import load_adapter
from oracle.grading.python_family import Submission as PrefixSubmission
from oracle.prefix.checks import CHECKS

# Our engine, whose free does something more to a request of four blocks or more: in no_false_hit's program
# only step 9 (free(req 2), a step it does not judge, after its judged step 8) frees one.
PLANTED = """from engine.prefix import KVCacheManager as _Base, Request


class KVCacheManager(_Base):
    def free(self, request):
        blocks = list(self.req_to_blocks.get(request.request_id, []))
        super().free(request)
        if len(blocks) >= 4:
{plant}
"""
LEAVES_A_HOLDER = "            blocks[0].ref_cnt += 1  # a ref count: free_queue's rule"
RAISES = "            raise RuntimeError('planted')  # a crash: no rule's"


@pytest.fixture
def module(tmp_path: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """`module(name, plant)`: the importable name of PLANTED with `plant`."""
    sys.path.insert(0, str(tmp_path))

    def write(name: str, plant: str) -> str:
        (tmp_path / f"{name}.py").write_text(PLANTED.format(plant=plant))
        return name

    yield write
    sys.path.remove(str(tmp_path))


def graded(spec: str, *items: str) -> dict[str, ItemResult]:
    rubric = Rubric("t", tuple(RubricItem(item, item, 8) for item in items), "code")
    results = run_checks(CHECKS, rubric, PrefixSubmission(spec, load_adapter(spec)))
    return {result.id: result for result in results}


def test_a_difference_that_stops_a_program_costs_its_rule_s_item_that_passed(module) -> None:  # type: ignore[no-untyped-def]
    results = graded(f"lab:{module('leaves_a_holder', LEAVES_A_HOLDER)}", "no_false_hit", "free_queue")
    reader, owner = results["no_false_hit"], results["free_queue"]
    assert (reader.status, reader.points) == ("passed", 8)
    assert reader.message.startswith("not checked past no false hit: step 9 free(req 2): ref count:")
    assert (owner.status, owner.points) == ("failed", 0)
    assert owner.message.startswith("no false hit: step 9 free(req 2): ref count: block ")
    assert owner.message.endswith("[rule: free_queue] (found by item no_false_hit's programs, not this item's)")
    assert "  9  manager.free(req2)  <-- went wrong here" in owner.details  # the calls, in the lab's API


def test_a_difference_whose_item_the_rubric_leaves_out_is_the_reader_s(module) -> None:  # type: ignore[no-untyped-def]
    reader = graded(f"lab:{module('leaves_a_holder_alone', LEAVES_A_HOLDER)}", "no_false_hit")["no_false_hit"]
    assert (reader.status, reader.points) == ("failed", 0)
    assert reader.message.endswith("[rule: free_queue] (another rule's bug, but no item failed for it here)")


def test_a_difference_whose_item_does_not_apply_to_the_policy_is_the_reader_s(module) -> None:  # type: ignore[no-untyped-def]
    """Under @any (the universal invariants only) free_queue is not applicable: it cannot take the ref count."""
    results = graded(f"lab:{module('leaves_a_holder_any', LEAVES_A_HOLDER)}@any", "no_false_hit", "free_queue")
    assert results["free_queue"].status == "not_applicable"
    assert (results["no_false_hit"].status, results["no_false_hit"].points) == ("failed", 0)


def test_the_engine_alone_reads_past_nothing(module) -> None:  # type: ignore[no-untyped-def]
    results = graded(f"lab:{module('honest', '            pass')}@any", "no_false_hit", "free_queue")
    assert (results["no_false_hit"].status, results["no_false_hit"].message) == ("passed", "")


def test_a_crash_in_a_step_the_item_does_not_judge_is_its_own_once_it_checked_something(module) -> None:  # type: ignore[no-untyped-def]
    results = graded(f"lab:{module('raises', RAISES)}", "no_false_hit", "hit_cap")
    reader = results["no_false_hit"]
    assert (reader.status, reader.points) == ("failed", 0)
    assert reader.message.startswith("no false hit: step 9 free(req 2): ") and "planted" in reader.message
    assert results["hit_cap"].status == "passed"  # its program frees nothing


# Our engine, whose free of a request whose tokens start with FIRST and that held BLOCKS blocks rearranges the free queue
# (`free`: its blocks, head first) to `order`: in the rubric here only no_false_hit's program makes such a free.
REQUEUED = """from engine.prefix import KVCacheManager as _Base, Request


class KVCacheManager(_Base):
    def free(self, request):
        held = len(self.req_to_blocks.get(request.request_id, []))
        super().free(request)
        if request.all_token_ids[0] == {first} and held == {blocks}:
            queue = self.block_pool.free_block_queue
            free = queue.get_all_free_blocks()
            for block in free:
                queue.remove(block)
            for block in {order}:
                queue.append(block)
"""


def requeued(tmp_path: Path, name: str, first: int, blocks: int, order: str) -> str:
    (tmp_path / f"{name}.py").write_text(REQUEUED.format(first=first, blocks=blocks, order=order))
    return name


@pytest.fixture
def importable(tmp_path: Path):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))


def test_a_free_order_read_past_costs_free_queue_s_item_that_passed(importable: Path) -> None:
    """free(req 0) of no_false_hit puts its blocks (3, 1) at the queue's head, before 6, 7, 8: its next admit takes
    them first, which no order within the free explains. free_queue's own program (one-block frees) never shows it;
    no_false_hit reads past it, naming free_queue, which fails with it (it passed: before, 16/16)."""
    name = requeued(importable, "to_the_head", 1, 3, "free[-2:] + free[:-2]")
    results = graded(f"lab:{name}", "no_false_hit", "free_queue")
    reader, owner = results["no_false_hit"], results["free_queue"]
    assert (reader.status, reader.points) == ("passed", 8)
    assert reader.message.startswith("read past no false hit: step 6 admit(req 2, tokens [60..75]): free order: "
                                  "the free queue's head: expected [6, 7, 8, 3], got [3, 1, 6, 7]")
    assert (owner.status, owner.points) == ("failed", 0)
    assert owner.message.endswith("[rule: free_queue] (found by item no_false_hit's programs, not this item's)")


def test_a_release_order_of_any_shape_read_past_costs_reverse_order_free_s_item_that_passed(importable: Path) -> None:
    """free(req 2) of no_false_hit gives its blocks back with the first two swapped (8, 3, 7, 6 for 3, 8, 7, 6): the
    blocks of one free in another order, the release order's, whatever the permutation."""
    name = requeued(importable, "swapped", 60, 4, "[free[1], free[0], *free[2:]]")
    results = graded(f"lab:{name}", "no_false_hit", "reverse_order_free")
    reader, owner = results["no_false_hit"], results["reverse_order_free"]
    assert (reader.status, reader.points) == ("passed", 8)
    assert "free(req 2)" in reader.message and "release order:" in reader.message
    assert (owner.status, owner.points) == ("failed", 0)
    assert owner.message.startswith("no false hit: step 10 admit(req 4, tokens [1..8, 12]): release order: the blocks "
                                    "free(req 2) put back: expected [3, 8, 7], got [8, 3, 7]")
    assert owner.message.endswith("(found by item no_false_hit's programs, not this item's)")
