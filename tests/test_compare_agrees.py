"""compare.agrees, the machine's whole-state test after each call, says True exactly when first_difference finds
nothing: asked beside it after every call of real machine runs, on the Python engine and on each broken variant
(whose states differ from the model's in every aspect the variants break)."""


import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.hw3.adapters import load_python
from oracle.hw3.compare import agrees, first_difference
from oracle.hw3.machine import Divergence, Driver, machine_of
from oracle.hw3.observation import ImplementationFailure
from oracle.stats import RunStats
from tests.conftest import BROKEN_PYTHON, broken_python

BROKEN = sorted(p.stem for p in BROKEN_PYTHON.glob("*.patch"))


class Disagreement(Exception):
    """agrees and first_difference said different things of one state (not an AssertionError: a Divergence is)."""


def checked_both_ways(module: str, stats: RunStats) -> type:
    class BothWays(Driver):
        def check(self, shown: object, failed: bool) -> None:
            try:
                seen = self.impl.observe(self.engine)
            except ImplementationFailure:
                return super().check(shown, failed)
            difference = first_difference(self.model, seen, failed)
            if agrees(self.model, seen, failed) != (difference is None):
                raise Disagreement(f"after {shown}: agrees says {difference is None}, first_difference {difference}")
            stats.events["states compared"] += 1
            stats.events["states differing"] += difference is not None
            super().check(shown, failed)

    return machine_of(BothWays)(load_python(module), stats)


@pytest.mark.parametrize("module", ["engine.llm_memory", *(broken_python(name) for name in BROKEN)])
def test_agrees_exactly_when_first_difference_finds_nothing(module: str) -> None:
    stats = RunStats()
    run_settings = settings(max_examples=60, stateful_step_count=15, deadline=None, database=None,
                            phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    try:
        run_state_machine_as_test(seed(0)(checked_both_ways(module, stats)), settings=run_settings)
    except Divergence:
        assert module != "engine.llm_memory"
    assert stats.events["states compared"] >= 20
    if module == "engine.llm_memory":
        assert stats.events["states differing"] == 0
