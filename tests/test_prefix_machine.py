"""The prefix state machine against our engine (engine/prefix): a CI-sized profile, and the boundaries
it must reach. `PAGEDCHECK_PROFILE=long` runs 2000 programs of 100 steps."""

import os

from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.prefix import load_adapter
from oracle.prefix.machine import machine_for
from oracle.stats import RunStats

LONG = os.environ.get("PAGEDCHECK_PROFILE") == "long"
PROFILE = settings(max_examples=2000 if LONG else 100, stateful_step_count=100 if LONG else 25, deadline=None,
                   suppress_health_check=list(HealthCheck))

TestPrefixEngineAgainstModel = machine_for(load_adapter("engine")).TestCase
TestPrefixEngineAgainstModel.settings = PROFILE

BOUNDARY_EVENTS = ("hit", "miss", "warm_hit", "evicted_warm", "refused", "append_refused", "pool_exhausted",
                   "cow_copy", "reset", "reset_refused", "double_free", "unknown_free")


def test_prefix_profile_reaches_every_boundary():
    """Every event in at least two of three seeds (see tests/test_machine.py for why not all three)."""
    runs = []
    for run_seed in (1, 2, 3):
        run = RunStats()
        run_state_machine_as_test(seed(run_seed)(machine_for(load_adapter("engine"), run)),
                                  settings=settings(PROFILE, database=None))
        runs.append(run)
    missing = {event: sum(1 for run in runs if not run.events[event]) for event in BOUNDARY_EVENTS}
    assert all(count <= 1 for count in missing.values()), f"missing from runs: {missing}"
