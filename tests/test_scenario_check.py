"""oracle/grading/python_family.py's scenario_check on plain values: a replay that gives Findings as a family's would
(no adapter, no process), and what the item says of them: its own rule's difference fails it (and charges the
rules it read past); another rule's difference, read past to the end or stopped at, leaves a stopped excuse
(settlement.py weighs it by points) after a call of its rule, and leaves it not run before one."""

import pytest

from oracle.difference import Difference
from oracle.finding import Finding
from oracle.grading.grader import NotRun
from oracle.grading.python_family import Submission, scenario_check
from oracle.program import Program, Step

PROGRAM = Program("p", (Step("admit", ()), Step("swap_out", (0,)), Step("free", (1,)), Step("swap_in", (0,))))


def found(step: int, rule: str, **more) -> Finding:
    return Finding("p", step, f"call {step}", Difference("table size", "", 3, 2), rule, **more)


def outcome(finding: Finding | None):
    rules: list[str] = []

    def replay(program: Program, adapter: object, calls: list[str], rule: str) -> Finding | None:
        rules.append(rule)
        calls.append("  1. admit")
        return finding

    result = scenario_check("swap", "the swap rule", [PROGRAM], replay, {"swap_out", "swap_in"}).run(
        Submission("s", factory=lambda: None), {})
    assert rules == ["swap"]  # the replay is told the rule it judges
    return result


def test_nothing_found_passes_with_no_excuse():
    result = outcome(None)
    assert result.passed and result.excuse is None


def test_its_own_rules_difference_fails_it_and_charges_what_it_read_past():
    result = outcome(found(4, "swap", past=(found(2, "watermark"),)))
    assert not result.passed and result.message.startswith("p: step 4 call 4")
    assert [set(e.owners) for e in result.excuse] == [{"watermark"}]


def test_another_rules_difference_read_past_to_the_end_is_a_stopped_excuse_too():
    """Reading past adds only the item's own later failures: what the program did after a refusal is not what it
    was written to check, so the excuse weighs the points as a stop does, and gives no pass before a call of its
    rule (an implementation that refuses every request would otherwise pass every item that reads past it)."""
    result = outcome(found(3, "watermark", followed=True))
    assert result.passed and result.message.startswith("read past p: step 3")
    assert [(set(e.owners), e.stopped, e.absent_holds) for e in result.excuse] == [({"watermark"}, True, False)]
    with pytest.raises(NotRun):
        outcome(found(1, "watermark", followed=True))


def test_another_rules_difference_that_stopped_it_after_a_call_of_its_rule_is_a_stopped_excuse():
    result = outcome(found(3, "block_table"))
    assert result.passed and result.message.startswith("not checked past p: step 3")
    assert [(set(e.owners), e.stopped, e.absent_holds) for e in result.excuse] == [({"block_table"}, True, False)]


def test_another_rules_difference_before_any_call_of_its_rule_leaves_it_not_run():
    with pytest.raises(NotRun) as stopped:
        outcome(found(1, "block_table"))
    assert [(set(e.owners), e.stopped) for e in stopped.value.excuse] == [({"block_table"}, True)]
