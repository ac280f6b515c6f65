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
