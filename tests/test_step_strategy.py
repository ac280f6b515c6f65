"""oracle/step_strategy.py: a machine that draws its steps with Steps runs only rules whose preconditions hold and
whose bundles hold something, consumes what `consumes` takes, draws Choice and Between values (and any other
strategy) as given, shrinks a failure to the simplest values, and prints it as Hypothesis prints any machine's
program (`name_0 = state.rule(arg=...)`, bundle values by name)."""

import re

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings, strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, precondition, rule, run_state_machine_as_test

from oracle.determinism import fixed_constants
from oracle.step_strategy import Between, Choice, ListOf, install

RUN = settings(max_examples=100, stateful_step_count=20, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))


@given(st.data())
def test_a_choice_draws_one_of_its_values_and_draws_a_nested_one_in_turn(data: st.DataObject) -> None:
    value = data.draw(Choice("a", Choice(1, 2), Between(-5, 5)))
    assert value in ("a", 1, 2) or (isinstance(value, int) and -5 <= value <= 5)


@given(st.data())
def test_a_list_of_draws_its_length_within_bounds_then_each_element(data: st.DataObject) -> None:
    value = data.draw(Choice(ListOf(Between(0, 2), 0, 0), ListOf(Choice(7, "a", 8), 1, 9)))
    assert value == [] or (1 <= len(value) <= 9 and all(v in (7, "a", 8) for v in value))


def test_a_list_of_a_choice_that_nests_strategies_is_refused() -> None:
    with pytest.raises(ValueError):
        ListOf(Choice(7, Between(0, 2)), 1, 9)


def test_a_choice_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError):
        Choice()


class Ledger(RuleBasedStateMachine):
    """Opens accounts, deposits into open ones, closes them; counts what it did."""

    accounts = Bundle("accounts")
    seen: dict

    def __init__(self) -> None:
        super().__init__()
        install(self, order=("open", "deposit"))
        self.open_ids: list[int] = []
        self.frozen = False

    @rule(target=accounts, number=Choice(1, 2, Between(10, 99)))
    def open(self, number: int) -> int:
        self.open_ids.append(number)
        self.seen["open"] += 1
        return number

    @rule(account=accounts, amount=st.integers(1, 5))
    def deposit(self, account: int, amount: int) -> None:
        assert account in self.open_ids, "a deposit into an account never opened"
        self.seen["deposit"] += 1

    @rule(account=consumes(accounts))
    def close(self, account: int) -> None:
        assert account in self.open_ids, f"closing {account} twice"
        self.open_ids.remove(account)
        self.seen["close"] += 1

    @precondition(lambda self: not self.frozen)
    @rule(now=Choice(False, True))
    def freeze(self, now: bool) -> None:
        assert not self.frozen, "a rule ran while its precondition was false"
        self.frozen = now
        self.seen["freeze"] += 1


def test_steps_run_only_rules_that_can_run_and_consume_what_they_take() -> None:
    seen = {"open": 0, "deposit": 0, "close": 0, "freeze": 0}
    run_state_machine_as_test(seed(1)(type("Ledger", (Ledger,), {"seen": seen})), settings=RUN)
    assert all(seen.values()), seen


class Overdrawn(Ledger):
    @rule(account=consumes(Ledger.accounts), amount=Choice(0, 1, 2, Between(3, 1000)))
    def withdraw(self, account: int, amount: int) -> None:
        assert amount < 500, f"withdrew {amount}"


def test_a_failure_shrinks_to_the_simplest_values_and_prints_as_a_program() -> None:
    machine = type("Overdrawn", (Overdrawn,), {"seen": {"open": 0, "deposit": 0, "close": 0, "freeze": 0}})
    with pytest.raises(AssertionError, match="withdrew 500") as failure, fixed_constants():
        run_state_machine_as_test(seed(2)(machine), settings=settings(RUN, max_examples=500,
                                                                     phases=[Phase.generate, Phase.shrink]))
    printed = "\n".join(getattr(failure.value, "__notes__", [])) + "\n"
    assert "accounts_0 = state.open(number=1)\nstate.withdraw(account=accounts_0, amount=500)\n" in printed, printed


class Sent(Ledger):
    @rule(account=Ledger.accounts, words=ListOf(Between(0, 9), 1, 9))
    def send(self, account: int, words: list[int]) -> None:
        assert sum(words) < 12 or len(words) < 3, f"sent {words}"


def test_a_list_shrinks_to_its_fewest_and_simplest_elements() -> None:
    """A failure that needs three words summing to 12 or more shrinks to a list of three, the earliest of them as
    small as it can be (the length lowered, then the number the words are the digits of)."""
    machine = type("Sent", (Sent,), {"seen": {"open": 0, "deposit": 0, "close": 0, "freeze": 0}})
    with pytest.raises(AssertionError, match="sent ") as failure, fixed_constants():
        run_state_machine_as_test(seed(2)(machine), settings=settings(RUN, max_examples=500,
                                                                     phases=[Phase.generate, Phase.shrink]))
    printed = "\n".join(getattr(failure.value, "__notes__", [])) + "\n"
    sent = re.search(r"state\.send\(account=accounts_0, words=\[0, (\d), (\d)\]\)\n", printed)
    assert sent and int(sent[1]) + int(sent[2]) == 12, printed
