"""The prefix state machine against our engine (engine/prefix): a CI-sized profile, and the boundaries
it must reach. `PAGEDCHECK_PROFILE=long` runs 2000 programs of 100 steps."""

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

from oracle.prefix import load_adapter
from oracle.prefix.machine import machine_for

LONG = os.environ.get("PAGEDCHECK_PROFILE") == "long"
PROFILE = settings(max_examples=2000 if LONG else 100, stateful_step_count=100 if LONG else 25, deadline=None,
                   suppress_health_check=list(HealthCheck))

TestPrefixEngineAgainstModel = machine_for(load_adapter("engine")).TestCase
TestPrefixEngineAgainstModel.settings = PROFILE

BOUNDARY_EVENTS = ("hit", "miss", "warm_hit", "evicted_warm", "refused", "append_refused", "pool_exhausted",
                   "cow_copy", "reset", "reset_refused", "double_free", "unknown_free")


def test_prefix_profile_reaches_every_boundary(tmp_path):
    """Every event in at least two of three seeds (see tests/test_machine.py for why not all three), at the
    CLI's default program length (copy-on-write of a shared block needs a hit on a live request first: at 25
    calls seeds 1 and 3 make none)."""
    runs = []
    root = Path(__file__).resolve().parents[1]
    for run_seed in (1, 2, 3):
        out = tmp_path / f"seed{run_seed}.json"
        subprocess.run([sys.executable, "-m", "oracle.cli", "fuzz", "--family", "prefix", "--examples", "100",
                        "--steps", "50", "--seed", str(run_seed), "-q", "--json", str(out)], cwd=root, check=True,
                       capture_output=True)
        runs.append(json.loads(out.read_text())["events"])
    missing = {event: sum(1 for run in runs if not run.get(event)) for event in BOUNDARY_EVENTS}
    assert all(count <= 1 for count in missing.values()), f"missing from runs: {missing}"
