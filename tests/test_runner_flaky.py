"""oracle/runner.fuzz when an implementation answers the same calls otherwise on Hypothesis's replay of a failing
program: the draws that follow its answers differ, Hypothesis cannot make the program again
(FlakyStrategyDefinition), and that is the implementation's failure, reported as the fuzz run's divergence, never an
exception out of the run (which the grader would report as its own fault)."""

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from oracle.family import Family
from oracle.runner import fuzz
from oracle.stats import RunStats


def toy_family(answers: "itertools.count[int]") -> Family:
    """A family of one rule whose next draw depends on the implementation's answer; every third program fails."""

    def machine_for(factory, stats: RunStats) -> type:  # type: ignore[no-untyped-def]
        class Machine(RuleBasedStateMachine):
            def __init__(self) -> None:
                super().__init__()
                self.implementation = factory()
                stats.examples += 1

            @rule(data=st.data())
            def ask(self, data: st.DataObject) -> None:
                stats.steps += 1
                answer = self.implementation()
                data.draw(st.integers(0, 3) if answer % 2 else st.booleans())
                assert stats.examples < 3, "diverged"

        return Machine

    def load_adapter(impl: str):  # type: ignore[no-untyped-def]
        return lambda: (lambda: next(answers))  # each call answers otherwise: a count

    return Family("toy", "an implementation that never answers the same way twice", machine_for, load_adapter,
                  lambda impl: [])


def test_an_implementation_answering_otherwise_on_replay_is_the_runs_divergence() -> None:
    family = toy_family(itertools.count())
    report = fuzz(family, "toy", family.load_adapter("toy"), examples=20, steps=5, seed=1)
    assert not report.passed
    assert report.divergence is not None and report.divergence.startswith(
        "flaky: the same calls, made again, were answered otherwise"), report.divergence
    assert "FlakyStrategyDefinition" in report.divergence
    assert report.unreplayed is None and report.failure is None  # no failure of the implementation's was seen again


def test_an_implementation_answering_the_same_way_fails_plainly() -> None:
    family = toy_family(itertools.repeat(1))  # type: ignore[arg-type]
    report = fuzz(family, "toy", family.load_adapter("toy"), examples=20, steps=5, seed=1)
    assert report.divergence is not None and report.divergence.startswith("diverged"), report.divergence
