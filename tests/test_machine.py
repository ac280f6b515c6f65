"""The state machine against the built-in engine: a CI-sized profile, and a long one on request.

`PAGEDCHECK_PROFILE=long python -m pytest tests/test_machine.py` runs 3000 programs of 200 steps.
"""

import os

from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.hw3 import load_adapter
from oracle.hw3.machine import machine_for
from oracle.stats import RunStats
from tests.conftest import broken_python

LONG = os.environ.get("PAGEDCHECK_PROFILE") == "long"
PROFILE = settings(
    max_examples=3000 if LONG else 150,
    stateful_step_count=200 if LONG else 50,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

TestEngineAgainstModel = machine_for(load_adapter("engine")).TestCase
TestEngineAgainstModel.settings = PROFILE

BOUNDARY_EVENTS = (
    "cow_copy", "oom_on_create", "oom_on_append", "oom_on_cow", "oom_needing_l2", "l2_allocated", "cap_refusal",
    "reached_cap", "null_engine", "unknown_id", "duplicate_id", "bad_length", "init_refused", "pool_over_256_blocks",
)


def test_profile_reaches_every_boundary():
    """The CI profile must exercise what it claims to: CoW, OOM of each kind, L2 allocation, the cap.

    Three seeds, and every event in at least two of them: Hypothesis also draws from literal constants of
    the modules loaded in the process, so one seed's run depends on its surroundings (pytest, CLI, mutmut);
    an event missing from two runs out of three is a generation regression, not bad luck.
    """
    runs = []
    for run_seed in (1, 2, 3):
        run = RunStats()
        machine = machine_for(load_adapter("engine"), run)
        run_state_machine_as_test(seed(run_seed)(machine), settings=settings(PROFILE, database=None))
        runs.append(run)
    rare = {event: sum(1 for run in runs if not run.events[event]) for event in BOUNDARY_EVENTS}
    assert all(missing <= 1 for missing in rare.values()), f"missing from runs: {rare}"


def test_an_error_of_the_grader_in_a_step_is_the_run_failure_not_a_later_divergence(monkeypatch) -> None:
    """Teardown destroys the engine and checks it only when no step raised: an error of the grader's own code
    (here its picture of a failed call) must reach the user as that error, not as the divergence a destroy of
    the half-run program would show (tests.broken.cap_one_early: the pool differs after llm_destroy)."""
    import pytest

    import oracle.hw3.driver as driver

    def broken_picture(*_: object) -> None:
        raise TypeError("the grader's own bug")

    monkeypatch.setattr(driver, "observed", broken_picture)
    state = machine_for(load_adapter(broken_python("cap_one_early")))()
    state.init(null_pool=False, pool_size=16384)
    sequence = state.create_filling_pool(seq_id=4, slack=16)
    with pytest.raises(TypeError, match="the grader's own bug"):
        try:
            state.append_burst(kv_data=-1861, past=0, seq_id=sequence, to="block")  # the 4096th append refused
        finally:
            state.teardown()  # as Hypothesis calls it
