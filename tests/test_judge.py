"""oracle/grading/judge.py, the one judge of every family's directed items, on hand-made findings (no adapter, no
process): what the item says of one program's replay and which items each difference is left to, for a family
whose program goes on past a difference the model followed (the prefix family's facts) and for one whose does not
(a served family's, blockspace's), then settled (oracle/grading/settlement.py) as the grader settles them."""

import pytest

from oracle.difference import Difference
from oracle.finding import Finding
from oracle.grading.grader import ANY_OTHER, NotRun, Outcome, settle
from oracle.grading.judge import Judge, Replayed, directed
from oracle.program import Program, Step

# steps 1-5; step 3 is the one that exercises the item "own"'s rule (marked `*`, and its operation is "grow")
PROGRAM = Program("p", (Step("start"), Step("put"), Step("grow", judge=True), Step("put"), Step("grow", judge=True)))
ITEMS = frozenset({"own", "other", "third"})
GOES_ON = Judge(lambda item, step: step.judge, ITEMS, {"widget order": frozenset({"own"})}, goes_on=True)
STOPS = Judge(lambda item, step: step.op == "grow", ITEMS)


def finding(step: int, rule: str, aspect: str = "widget count", **more) -> Finding:
    return Finding("p", step, f"call{step}()", Difference(aspect, "", 3, 2), rule, **more)


def listed(found: Finding) -> str:
    return f"calls up to step {found.step}"


def test_nothing_found_passes_with_no_excuse():
    for judge in (GOES_ON, STOPS):
        outcome = judge("own", PROGRAM, None, listed)
        assert outcome.passed and outcome.excuse is None and outcome.message == ""


def test_its_own_rules_difference_fails_it_with_its_calls_and_charges_each_difference_read_past():
    seen: list[Finding] = []
    found = finding(4, "own", past=(finding(2, "other", "widget order"),))
    outcome = GOES_ON("own", PROGRAM, found, listed, seen=seen.append)
    assert not outcome.passed and outcome.message == "p: step 4 call4(): widget count: expected 3, got 2 [rule: own]"
    assert outcome.details == "calls up to step 4" and [f.step for f in seen] == [4]
    assert [(set(e.owners), e.failure.details, e.stopped) for e in outcome.excuse] == [
        ({"other"}, "calls up to step 2", False)]


def test_a_difference_its_own_rule_may_make_fails_it_though_another_rule_owns_it():
    outcome = GOES_ON("own", PROGRAM, finding(4, "other", "widget order"), listed)
    assert not outcome.passed and outcome.excuse is None and "[rule: other]" in outcome.message
    assert GOES_ON("third", PROGRAM, finding(4, "other", "widget order"), listed).passed  # not third's rule's to make


def test_the_rule_is_the_one_the_family_words_it_under():
    worded = lambda found: Finding(found.program, found.step, "grow(2)", found.difference, "own")  # noqa: E731
    outcome = STOPS("own", PROGRAM, finding(4, "other"), listed, words=worded)
    assert not outcome.passed and outcome.message.startswith("p: step 4 grow(2): widget count:")


def test_a_difference_read_past_where_the_program_goes_on_is_a_plain_excuse_even_before_its_rule():
    """The model took the implementation's answer and the program went on checking: what followed was checked,
    so the item passes (the excuse names the item of that rule, which may-make items may explain)."""
    outcome = GOES_ON("third", PROGRAM, finding(2, "other", "widget order", followed=True), listed)
    assert outcome.passed and outcome.message.startswith("read past p: step 2 call2(): widget order: expected 3, got 2 "
                                                         "(that is item other's to judge)")
    assert [(set(e.owners), e.stopped, e.absent_holds, set(e.unless)) for e in outcome.excuse] == [
        ({"other"}, False, True, {"own"})]


def test_a_difference_read_past_where_the_program_does_not_go_on_is_a_stop():
    """What a program did after a refusal is not what it was written to check: a stopped excuse, and the item is
    not run when no step of its rule ran before the first difference, nor an earlier program ran whole."""
    outcome = STOPS("own", PROGRAM, finding(4, "other", followed=True), listed)
    assert outcome.passed and outcome.message.startswith("read past p: step 4") and \
        outcome.message.endswith(", then nothing of its own rule")
    assert [(set(e.owners), e.stopped, e.absent_holds) for e in outcome.excuse] == [({"other"}, True, False)]
    with pytest.raises(NotRun) as stopped:
        STOPS("own", PROGRAM, finding(2, "other", followed=True), listed)
    assert "checked nothing of its own rule: p: step 2" in str(stopped.value)
    assert [set(e.owners) for e in stopped.value.excuse] == [{"other"}]
    assert STOPS("own", PROGRAM, finding(2, "other", followed=True), listed, checked=True).passed


def test_where_the_program_does_not_go_on_it_stopped_checking_at_the_first_difference_read_past():
    found = finding(4, "third", past=(finding(2, "other"),))  # a step of its rule (3) only after the first one
    with pytest.raises(NotRun) as stopped:
        STOPS("own", PROGRAM, found, listed)
    assert "p: step 2" in str(stopped.value) and [set(e.owners) for e in stopped.value.excuse] == [{"other"}, {"third"}]
    outcome = GOES_ON("own", PROGRAM, found, listed)  # where it goes on, it checked step 3 before stopping at 4
    assert outcome.passed and outcome.message.startswith("not checked past p: step 4")


def test_another_rules_difference_that_stops_it_passes_it_after_a_step_of_its_rule_else_not_run():
    for judge in (GOES_ON, STOPS):
        outcome = judge("own", PROGRAM, finding(4, "other"), listed)
        assert outcome.passed and outcome.message == \
            "not checked past p: step 4 call4(): widget count: expected 3, got 2 (that is item other's to judge)"
        assert [(set(e.owners), e.stopped, e.absent_holds, e.failure.details) for e in outcome.excuse] == [
            ({"other"}, True, False, "calls up to step 4")]
        with pytest.raises(NotRun) as stopped:
            judge("own", PROGRAM, finding(2, "other"), listed)
        assert [(set(e.owners), e.stopped) for e in stopped.value.excuse] == [({"other"}, True)]
        assert judge("own", PROGRAM, finding(2, "other"), listed, checked=True).passed  # an earlier program ran whole


def test_a_stop_of_an_ungraded_items_rule_is_left_to_the_item_itself():
    outcome = GOES_ON("own", PROGRAM, finding(4, "other"), listed, ungraded={"other"})
    assert outcome.passed and [set(e.owners) for e in outcome.excuse] == [{"own"}]
    assert settle({"own": "passed"}, {"own": outcome.excuse})["own"].failure.message.startswith("p: step 4")


def test_a_difference_of_no_items_rule_fails_it_once_it_checked_its_rule_else_leaves_it_not_run():
    outcome = GOES_ON("own", PROGRAM, finding(4, "fuzz"), listed)
    assert not outcome.passed and outcome.message.endswith("[rule: fuzz]") and outcome.excuse is None
    with pytest.raises(NotRun) as stopped:
        GOES_ON("own", PROGRAM, finding(2, "fuzz"), listed)
    assert stopped.value.excuse is None and "(that is item fuzz's to judge)" in str(stopped.value)
    # a family that names no items: every rule is some item's
    assert Judge(lambda item, step: step.judge)("own", PROGRAM, finding(4, "fuzz"), listed).passed


def test_settled_a_stop_charges_the_owner_that_passed_and_holds_where_it_failed():
    outcome = STOPS("own", PROGRAM, finding(4, "other"), listed)
    charged = settle({"own": "passed", "other": "passed"}, {"own": outcome.excuse})
    assert set(charged) == {"other"} and charged["other"].reader == "own"
    assert settle({"own": "passed", "other": "failed"}, {"own": outcome.excuse}) == {}


# A family whose rules are not named as its items (HW3's: rules.py names each rule's item), whose replay says itself
# what it compared of the item's rule (Replayed.checked), and whose programs go on: `directed` over several programs.
RULE_ITEMS = {"rule of own": "own", "rule of other": "other"}
NAMED = Judge(lambda item, step: False, goes_on=True, owner=lambda rule: RULE_ITEMS.get(rule, ANY_OTHER))


def _directed(*replayed: Replayed):
    return directed("own", "rule of own", NAMED, lambda item, sub: (r for r in replayed)).run(None, {})


def test_a_rule_is_judged_as_the_item_the_family_names_for_it():
    outcome = NAMED("own", PROGRAM, finding(4, "rule of own", past=(finding(2, "rule of other"),)), listed)
    assert not outcome.passed and outcome.message.endswith("[rule: rule of own]")
    assert [set(e.owners) for e in outcome.excuse] == [{"other"}]
    read = NAMED("own", PROGRAM, finding(2, "rule nobody grades", followed=True), listed)
    assert read.passed and [set(e.owners) for e in read.excuse] == [{ANY_OTHER}]
    assert read.message.endswith("(that is rule rule nobody grades's to judge)")


def test_a_program_read_past_to_its_end_lets_the_next_one_fail_it_and_every_read_is_left_to_its_item():
    read = Replayed(PROGRAM, finding(2, "rule of other", followed=True), listed, checked=True)
    own = Replayed(PROGRAM, finding(4, "rule of own"), listed, checked=True)
    failed = _directed(read, own)
    assert not failed.passed and failed.message.startswith("p: step 4")
    assert [(set(e.owners), e.failure.details) for e in failed.excuse] == [({"other"}, "calls up to step 2")]
    passed = _directed(read, Replayed(PROGRAM, None, listed, checked=True), read)
    assert passed.passed and passed.message.startswith("read past p: step 2 call2()")
    assert [set(e.owners) for e in passed.excuse] == [{"other"}, {"other"}]


def test_an_item_whose_programs_compared_nothing_of_its_rule_is_not_run_whatever_they_read_past():
    unchecked = Replayed(PROGRAM, finding(2, "rule of other", followed=True), listed, checked=False)
    with pytest.raises(NotRun, match=r"^checked nothing of its own rule: p: step 2 .*item other's to judge") as stop:
        _directed(unchecked, Replayed(PROGRAM, None, listed, checked=False))
    assert [set(e.owners) for e in stop.value.excuse] == [{"other"}]
    assert _directed(unchecked, Replayed(PROGRAM, None, listed, checked=True)).passed  # a later program checked it


def test_the_family_words_its_own_failure_and_what_a_student_reads_of_a_read():
    worded = Replayed(PROGRAM, finding(4, "rule of own", past=(finding(2, "rule of other"),)), listed, checked=True,
                      student=lambda found: f"**Call {found.step}**", failed=lambda found: Outcome(False, "own words", repro="r.c"))
    outcome = _directed(worded)
    assert (outcome.passed, outcome.message, outcome.repro) == (False, "own words", "r.c")
    assert [e.failure.student for e in outcome.excuse] == ["**Call 2**"]


def test_a_family_whose_bug_may_make_any_difference_read_past_lets_its_failure_pay_for_them():
    """HW3's fact (no table of what a bug may make): fork_no_incref's fork fails, and the create and append
    differences its programs read past first are its own bug's making: they charge no other item."""
    alone = Judge(lambda item, step: False, goes_on=True, owner=NAMED.owner, failed_reads_cost=False)
    read = Replayed(PROGRAM, finding(2, "rule of other", followed=True), listed, checked=True)
    own = Replayed(PROGRAM, finding(4, "rule of own", past=(finding(3, "rule of other"),)), listed, checked=True)
    failed = directed("own", "rule of own", alone, lambda item, sub: (r for r in (read, own))).run(None, {})
    assert not failed.passed and failed.excuse is None
    assert _directed(read, own).excuse  # where reads cost their items (the default), both are left to "other"
