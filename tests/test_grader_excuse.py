"""grading.grader's excuses: an item that read past a bug it names as other items' keeps its pass; a named
item (in the rubric) that passed takes the bug itself, once, with what the excused item saw. Where nobody can
be named (an item that names itself, an unnamed owner none of which failed), the excused item fails."""

from typing import Any, Mapping

import pytest

from oracle.grading.grader import ANY_OTHER, Check, Excuse, NotRun, Outcome, Seen, run_checks, strict
from oracle.grading.report import ItemResult
from oracle.grading.rubric import Rubric, RubricItem

SAW = Seen("own: step 3 fork(1, 2): ref_count[0]: expected 2, got 1", "calls")


def excused(*owners: str, not_run: bool = False):  # type: ignore[no-untyped-def]
    def run(context: Any, options: Mapping[str, Any]) -> Outcome:
        excuse = Excuse(frozenset(owners), SAW)
        if not_run:
            raise NotRun("could not check its rule past step 3 (that is item B's to judge)", excuse)
        return Outcome(True, "not checked past step 3 (that is item B's to judge)", excuse=excuse)
    return run


def plain(passed: bool):  # type: ignore[no-untyped-def]
    return lambda context, options: Outcome(passed, "" if passed else "B: its own bug")


def grade(checks: dict[str, Any], visibility: Mapping[str, str] | None = None) -> dict[str, ItemResult]:
    table = {name: Check(name, f"rule {name}", run, catch_all=name == "fuzz") for name, run in checks.items()}
    shown = visibility or {}
    rubric = Rubric("t", tuple(RubricItem(name, name, 5, shown.get(name, "visible")) for name in checks), "code")
    told: list[str] = []
    results = run_checks(table, rubric, None, on_item=lambda result: told.append(result.id))
    assert sorted(told) == sorted(checks)  # each item told once, in its final state
    return {result.id: result for result in results}


def test_the_excuse_holds_when_the_named_item_fails() -> None:
    results = grade({"A": excused("B"), "B": plain(False)})
    assert (results["A"].status, results["A"].points) == ("passed", 5)


def test_a_named_item_that_passed_takes_the_bug_with_what_the_excused_item_saw() -> None:
    results = grade({"A": excused("B"), "B": plain(True)})
    assert (results["A"].status, results["A"].points) == ("passed", 5)
    assert (results["B"].status, results["B"].points) == ("failed", 0)
    assert results["B"].message == SAW.message + " (found by item A's programs, not this item's)"
    assert results["B"].details == "calls"


@pytest.mark.parametrize("reader, owner, quoted", [
    ("hidden", "visible", False), ("after_due_date", "after_published", False), ("visible", "hidden", True),
    ("after_published", "after_published", True)])
def test_what_a_less_shown_reader_saw_stays_out_of_the_owners_student_text(reader: str, owner: str,
                                                                          quoted: bool) -> None:
    """A course's hidden item's programs are its own: the visible item charged with what they met tells the
    student only that a test not shown found it; the staff's message keeps the reader's calls."""
    results = grade({"A": excused("B"), "B": plain(True)}, {"A": reader, "B": owner})
    text = results["B"].for_student(10_000)
    assert results["B"].status == "failed" and results["B"].message.startswith(SAW.message)
    assert ("fork(1, 2)" in text, "not shown to you" in text) == (quoted, not quoted), text


def test_the_bug_costs_its_owner_once_however_many_items_read_past_it() -> None:
    """Not every reader: a second bug of the owner's rule, which the owner catches, then buys nothing back."""
    results = grade({"A": excused("B"), "C": excused("B"), "D": excused("B"), "B": plain(True)})
    assert [results[i].status for i in "ACDB"] == ["passed", "passed", "passed", "failed"]
    assert results["B"].message.endswith("(found by item A's programs, not this item's)")


def test_every_named_item_that_passed_takes_the_bug() -> None:
    results = grade({"A": excused("B", "C"), "B": plain(False), "C": plain(True)})
    assert [results[i].status for i in "ABC"] == ["passed", "failed", "failed"]
    assert results["B"].message == "B: its own bug"
    assert grade({"A": excused("B", "C"), "B": plain(False), "C": plain(False)})["A"].status == "passed"


def test_an_item_that_names_itself_is_not_excused() -> None:
    result = grade({"A": excused("A"), "B": plain(False)})["A"]
    assert (result.status, result.points) == ("failed", 0)
    assert result.message == SAW.message + " (another rule's bug, but no item failed for it here)"
    assert result.details == "calls"


def test_an_owner_the_rubric_leaves_out_is_the_course_s_choice() -> None:
    assert grade({"A": excused("tail_insertion"), "B": plain(True)})["A"].status == "passed"


def test_some_other_item_must_fail_for_an_unnamed_owner() -> None:
    assert grade({"A": excused(ANY_OTHER), "B": plain(True)})["A"].status == "failed"
    assert grade({"A": excused(ANY_OTHER), "B": plain(False)})["A"].status == "passed"
    assert grade({"A": excused(ANY_OTHER), "fuzz": plain(False)})["A"].status == "failed"  # a catch-all pays for no one


@pytest.mark.parametrize("owner_passes", [True, False])
def test_a_not_run_item_s_excuse_is_settled_too(owner_passes: bool) -> None:
    results = grade({"A": excused("B", not_run=True), "B": plain(owner_passes)})
    assert (results["A"].status, results["A"].points, results["B"].status) == ("not_run", 0, "failed")


def test_a_strict_excuse_does_not_hold_when_its_owner_is_not_graded() -> None:
    def run(context: Any, options: Mapping[str, Any]) -> Outcome:
        return Outcome(True, "not checked past big_pool: crashed in append_kv", excuse=strict({"append_cow"}, SAW))
    assert grade({"A": run, "B": plain(True)})["A"].status == "failed"
    assert grade({"A": run, "append_cow": plain(False)})["A"].status == "passed"



def test_a_strict_excuse_whose_owner_passed_is_the_item_s_own_bug() -> None:
    """A probe that crashed in the very call it is about names that call's item; when that item passed, the
    crash is the probe's own rule's (an int offset past 2 GiB): the probe's item fails, not the call's."""
    def run(context: Any, options: Mapping[str, Any]) -> Outcome:
        return Outcome(True, "not checked past big_pool: crashed in append_kv", excuse=strict({"append_cow"}, SAW))
    results = grade({"A": run, "append_cow": plain(True)})
    assert (results["A"].status, results["append_cow"].status) == ("failed", "passed")


def weighed(checks: dict[str, Any], points: dict[str, int]) -> dict[str, ItemResult]:
    table = {name: Check(name, f"rule {name}", run, catch_all=name == "fuzz") for name, run in checks.items()}
    rubric = Rubric("t", tuple(RubricItem(name, name, points[name]) for name in checks), "code")
    return {result.id: result for result in run_checks(table, rubric, None)}


def test_a_failed_fuzz_item_that_names_a_rule_fails_that_rules_item_once_and_keeps_its_own_failure() -> None:
    def fuzz(context: Any, options: Mapping[str, Any]) -> Outcome:
        return Outcome(False, "fuzz: can_allocate: expected LATER, got OK [rule: B]",
                       excuse=Excuse(frozenset({"B"}), SAW))

    results = grade({"B": plain(True), "fuzz": fuzz})
    assert (results["B"].status, results["fuzz"].status) == ("failed", "failed")
    assert results["B"].message == SAW.message + " (found by item fuzz's programs, not this item's)"
    assert results["fuzz"].message == "fuzz: can_allocate: expected LATER, got OK [rule: B]"
    assert results["B"].points == 0 and grade({"B": plain(False), "fuzz": fuzz})["B"].message == "B: its own bug"


def test_an_item_stopped_by_another_rules_failure_passes_whatever_the_points() -> None:
    """An honest bug costs its own items: the item its program stopped keeps its points, however cheap the bug."""
    def stopped(context: Any, options: Mapping[str, Any]) -> Outcome:
        return Outcome(True, "not checked past step 3", excuse=Excuse(frozenset({"B"}), SAW, absent_holds=False,
                                                                      stopped=True))

    for weights in ({"A": 15, "B": 10}, {"A": 10, "B": 10}):
        verdicts = weighed({"A": stopped, "B": plain(False)}, weights)
        assert (verdicts["A"].status, verdicts["A"].points, verdicts["B"].status) == ("passed", weights["A"], "failed")
