"""oracle/table_machine.py: a machine built from a table of operations runs the start first and the others under
their own names, makes one driver per program from the adapter factory, counts the programs, and closes the
adapter (after its end step, unless a step failed); a failure is Hypothesis's, printed with the operations' names;
the repro preamble binds the machine."""

import pytest
from hypothesis import Phase, settings, strategies as st
from hypothesis.stateful import run_state_machine_as_test

from oracle.stats import RunStats
from oracle.table_machine import Operation, repro_preamble, table_machine


class Adapter:
    closed = 0

    def close(self) -> None:
        Adapter.closed += 1


class Driver:
    def __init__(self, adapter: Adapter, stats: RunStats):
        self.impl, self.stats, self.total = adapter, stats, None

    def start(self, total: int) -> None:
        self.total = total

    def add(self, n: int) -> None:
        assert self.total is not None, "start runs first"
        self.total += n
        self.stats.events["added"] += 1
        assert self.total < 50, f"the total reached {self.total}"


def machine_for():
    return table_machine("CounterMachine", Operation(Driver.start, {"total": st.integers(0, 3)}),
                         {"add": Operation(Driver.add, {"n": st.integers(0, 9)}),
                          "nothing": Operation(lambda driver: None)},
                         lambda adapter, stats, factory: Driver(adapter, stats))


def test_a_table_machine_runs_its_operations_and_counts_its_programs():
    stats, Adapter.closed = RunStats(), 0
    machine = machine_for()(Adapter, stats)
    assert machine.__name__ == "CounterMachine" and {"start", "add", "nothing"} <= set(vars(machine.__mro__[1]))
    with pytest.raises(AssertionError, match="the total reached"):
        run_state_machine_as_test(machine, settings=settings(max_examples=200, stateful_step_count=20, database=None,
                                                            deadline=None, phases=[Phase.generate]))
    assert stats.examples > 0 and stats.events["added"] > 0 and Adapter.closed == stats.examples


def test_the_repro_preamble_binds_the_machine_to_the_implementation():
    assert repro_preamble("oracle.fam", "FamMachine")("pkg.mod:Cls") == [
        "from oracle.fam import load_adapter", "from oracle.fam.machine import machine_for",
        "FamMachine = machine_for(load_adapter('pkg.mod:Cls'))"]


def test_an_operation_may_feed_a_bundle_draw_from_it_and_wait_for_its_precondition():
    from hypothesis.stateful import Bundle, consumes

    seen, Adapter.closed = [], 0
    kept = Bundle("kept")

    class Keeper(Driver):
        def keep(self, n: int) -> int:
            self.stats.events["kept"] += 1
            return n

        def drop(self, n: int) -> None:
            assert self.stats.events["kept"] > 0, "a value is drawn from the bundle only once one was kept"
            seen.append(n)

    machine = table_machine(
        "KeeperMachine", lambda factory: Operation(Keeper.start, {"total": st.just(factory.start_at)}),
        {"keep": Operation(Keeper.keep, {"n": st.integers(0, 9)}, target=kept),
         "drop": Operation(Keeper.drop, {"n": consumes(kept)}),
         "never": Operation(lambda driver: seen.append("never"), when=lambda driver: driver.total is None)},
        lambda adapter, stats, factory: Keeper(adapter, stats))
    factory = type("Factory", (Adapter,), {"start_at": 7})
    run_state_machine_as_test(machine(factory, RunStats()), settings=settings(
        max_examples=50, stateful_step_count=10, database=None, deadline=None, phases=[Phase.generate]))
    assert seen and "never" not in seen and all(0 <= n <= 9 for n in seen)  # the start ran first: never is never drawn


def test_the_start_is_named_as_given_and_the_end_runs_only_after_steps_that_did_not_fail():
    ended, Adapter.closed = [], 0

    def make(adapter: Adapter, stats: RunStats, factory: object) -> Driver:
        return Driver(adapter, stats)

    machine = table_machine("CounterMachine", Operation(Driver.start, {"total": st.integers(0, 3)}),
                            {"add": Operation(Driver.add, {"n": st.integers(0, 9)})}, make, start_name="init",
                            end=lambda driver: ended.append(driver.total))(Adapter, RunStats())
    state = machine()
    state.init(total=1)
    state.add(n=4)
    state.teardown()
    assert ended == [5] and Adapter.closed == 1 and "start" not in vars(machine.__mro__[1])
    state = machine()
    state.init(total=45)
    with pytest.raises(AssertionError, match="the total reached 54"):
        try:
            state.add(n=9)
        finally:
            state.teardown()  # as Hypothesis calls it: in a `finally`, the step's failure in flight
    assert ended == [5] and Adapter.closed == 2  # no end after the failed step; the adapter closed all the same
