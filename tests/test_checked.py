"""oracle/checked.py on a small driver of its own (a counter behind an adapter): the implementation's failure is a
crash, a query must change nothing and answer as the model does, each difference names the rule the family's
table gives it, and replay stops at the first difference, closes the adapter and words every call made."""

import pytest

from oracle.checked import Checked, Divergence, replay, rule_table
from oracle.difference import CRASH, Difference
from oracle.program import Program, Step
from oracle.serve import AdapterFailure

RULE_OF = rule_table({"count": "counting", "peek": "peeking"}, {"add": "adding", "peek": "peeking"}, "starting")


class Counter:
    """An implementation: a count, added to by `add`; `bump` is a query that (wrongly) adds too."""

    def __init__(self) -> None:
        self.count, self.closed = 0, False

    def add(self, n: int) -> list:
        if n < 0:
            raise AdapterFailure("add raised ValueError: negative")
        self.count += n
        return [(n, n)] if n != 3 else [(1,)]

    def bump(self) -> int:
        self.count += 1
        return self.count

    def peek(self) -> int | str:
        """A query: the count; it fails past 100 and refuses ("no") past 10."""
        if self.count > 100:
            raise AdapterFailure("peek raised OverflowError")
        return "no" if self.count > 10 else self.count

    def close(self) -> None:
        self.closed = True


class Driver(Checked):
    def __init__(self, adapter: Counter):
        super().__init__(adapter, None, RULE_OF)
        self.model, self.last = 0, {"count": 0}

    def state(self) -> dict:
        return {"count": self.impl.count}

    def add(self, n: int) -> None:
        self.step("add", f"add({n})")
        self.model += n
        self.run(lambda: self.impl.add(n), pairs=True)
        if self.impl.count != self.model:
            self.diverge(Difference("count", "", self.model, self.impl.count))
        self.last = self.state()

    def look(self) -> None:
        """A step of the `add` operation that asks the query `peek`; a refusal is followed."""
        self.step("add", "look()")
        super().ask("peek", self.model, self.impl.peek, follows=lambda got: got == "no")

    def ask(self, what: str = "bump", expected: int = 0) -> int:  # type: ignore[override]
        self.step("bump", "bump()")
        return super().ask(what, expected, self.impl.bump)


def test_rule_table_takes_the_aspect_then_the_operation_then_the_default():
    assert RULE_OF(Difference("count", "", 1, 2), "anything") == "counting"
    assert RULE_OF(Difference(CRASH, "", None, "raised"), "add") == "adding"
    assert RULE_OF(Difference(CRASH, "", None, "raised"), "start") == "starting"


def test_a_failure_of_the_implementation_or_a_reply_not_of_pairs_is_a_crash_of_the_calls_rule():
    driver = Driver(Counter())
    with pytest.raises(Divergence) as failed:
        driver.add(-1)
    assert (failed.value.call, failed.value.rule, failed.value.difference.aspect) == ("add(-1)", "adding", CRASH)
    assert failed.value.difference.got == "add raised ValueError: negative"
    with pytest.raises(Divergence) as unpaired:
        driver.add(3)
    assert "returned [(1,)], not a list of (src, dst) pairs" in str(unpaired.value)
    assert driver.stats.steps == 2 and driver.stats.rules["add"] == 2


def test_a_query_that_changes_the_state_is_caught_before_its_answer():
    driver = Driver(Counter())
    with pytest.raises(Divergence) as changed:
        driver.ask()
    difference = changed.value.difference
    assert (difference.aspect, difference.location, difference.expected, difference.got) == (
        "unchanged", "bump (a query)", "count 0", "count 1")


def test_replay_stops_at_the_first_difference_and_closes_the_adapter():
    counter = Counter()
    program = Program("p", (Step("add", (1,)), Step("add", (2,)), Step("add", (-1,)), Step("add", (4,))))
    calls: list[str] = []
    found = replay(program, Driver(counter), {"add": Driver.add}, calls)
    assert (found.program, found.step, found.call, found.rule) == ("p", 3, "add(-1)", "adding")
    assert calls == ["  1. add 1: add(1)", "  2. add 2: add(2)", "  3. add -1: add(-1)"] and counter.closed
    assert replay(Program("q", (Step("add", (1,)),)), Driver(Counter()), {"add": Driver.add}, []) is None


def test_a_query_that_crashes_breaks_the_querys_rule_not_the_steps():
    driver = Driver(Counter())
    driver.add(101)
    with pytest.raises(Divergence) as crashed:
        driver.look()
    assert (crashed.value.op, crashed.value.rule, crashed.value.difference.aspect) == ("add", "peeking", CRASH)


LOOKING = Program("p", (Step("add", (11,)), Step("look", ()), Step("add", (1,)), Step("add", (-1,))))
STEPS = {"add": Driver.add, "look": Driver.look}


def test_replay_for_a_rule_reads_past_a_refusal_of_another_and_stops_at_its_own_rule_or_where_it_cannot_follow():
    calls: list[str] = []
    found = replay(Program("p", LOOKING.steps[:3]), Driver(Counter()), STEPS, calls, "adding")
    assert (found.step, found.rule, found.followed, found.past) == (2, "peeking", True, ())
    assert len(calls) == 3  # it went on to the end
    stopped = replay(LOOKING, Driver(Counter()), STEPS, [], "adding")  # the crash of add(-1) is its own rule's
    assert (stopped.step, stopped.rule, stopped.followed) == (4, "adding", False)
    assert [(f.step, f.rule) for f in stopped.past] == [(2, "peeking")]
    own = replay(LOOKING, Driver(Counter()), STEPS, [], "peeking")  # its own rule's refusal is a failure
    assert (own.step, own.rule, own.followed, own.past) == (2, "peeking", False, ())
    assert replay(LOOKING, Driver(Counter()), STEPS, []).step == 2  # no rule (the fuzz): every difference stops


def test_replay_for_a_rule_stops_at_another_rules_difference_the_model_cannot_follow():
    program = Program("p", (Step("add", (1,)), Step("bump", ()), Step("add", (1,))))
    found = replay(program, Driver(Counter()), {"add": Driver.add, "bump": Driver.ask}, [], "adding")
    assert (found.step, found.rule, found.followed) == (2, "starting", False)  # `unchanged`: the step's rule


class TakingOver(Driver):
    """A driver that takes over the implementation's count after a difference of the counting rule (raised, not
    followed in `diverge`), as often as `times` says, and records the calls it made (Checked.run's `step`)."""

    def __init__(self, adapter: Counter, times: int):
        super().__init__(adapter)
        self.times, self.asked = times, 0

    def add(self, n: int) -> None:
        self.step("add", f"add({n})")
        self.model += n
        self.run(lambda: self.impl.add(n), step=Step("add", (n,)))
        if self.impl.count != self.model:
            self.diverge(Difference("count", "", self.model, self.impl.count))

    def take_over(self, divergence: Divergence) -> bool:
        self.asked += 1
        if self.asked > self.times:
            return False
        self.model = self.impl.count
        return True


class Doubling(Counter):
    def add(self, n: int) -> list:
        return super().add(2 * n)


ADDS = Program("p", (Step("add", (1,)), Step("add", (2,)), Step("add", (3,))))


def test_replay_goes_on_past_another_rules_difference_the_driver_takes_over_and_carries_the_calls_made():
    driver = TakingOver(Doubling(), times=5)
    found = replay(ADDS, driver, {"add": TakingOver.add}, [], "adding")
    assert (found.step, found.rule, found.followed) == (1, "counting", True) and driver.asked == 3
    assert [(f.step, f.difference.expected, f.difference.got) for f in found.past] == [(2, 4, 6), (3, 9, 12)]
    assert [(step.op, step.args) for step, _ in found.past[-1].made] == [("add", (1,)), ("add", (2,)), ("add", (3,))]
    assert found.past[-1].made[-1][1] == [(6, 6)]  # what the call returned


def test_replay_stops_where_the_driver_cannot_take_over_and_never_asks_for_the_rule_judged_or_the_fuzz():
    driver = TakingOver(Doubling(), times=1)
    found = replay(ADDS, driver, {"add": TakingOver.add}, [], "adding")
    assert (found.step, found.followed, [f.step for f in found.past]) == (2, False, [1]) and driver.asked == 2
    for rule in ("counting", None):  # its own rule's difference, or no rule judged: it stops, unasked
        driver = TakingOver(Doubling(), times=5)
        assert replay(ADDS, driver, {"add": TakingOver.add}, [], rule).step == 1 and driver.asked == 0


def test_replay_leaves_the_adapter_open_for_the_caller_when_asked():
    counter = Counter()
    assert replay(ADDS, TakingOver(counter, times=0), {"add": TakingOver.add}, [], "adding", close=False) is None
    assert not counter.closed
