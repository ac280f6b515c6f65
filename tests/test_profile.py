"""The default profile and the long one (tests/conftest.py, README "Development"): a tamper test marked
bwrap_repeat is graded without bubblewrap in CI and with it too in the long profile; a test with no isolation
parameter cannot be marked so (its only run would leave CI). Read from real collections of the tamper suites."""

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, listed_unmeasured

WITH_IDS = ("bubblewrap", "bwrap")  # the ids the tamper suites give their bubblewrap case
FALLBACK_IDS = ("without-bwrap", "no-bwrap", "without_bwrap", "fallback")


def collected(*args: str, long: bool = False) -> tuple[int, set[str], str]:
    """`pytest --collect-only ARGS` in a fresh process: its status, the test ids it lists, its output."""
    env = {**os.environ, "PAGEDCHECK_PROFILE": "long" if long else "default"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, {line for line in done.stdout.splitlines() if "::" in line}, done.stdout + done.stderr


def fallback_twins(node: str) -> set[str]:
    """The ids `node`'s case would have without bubblewrap."""
    return {node.replace(with_id, fallback, 1) for with_id in WITH_IDS if with_id in node for fallback in FALLBACK_IDS}


def test_a_bwrap_repeat_is_graded_without_bubblewrap_in_ci_and_with_it_in_the_long_profile() -> None:
    suites = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").glob("test_tamper*.py"))
    status, moved, said = collected(*suites, "-m", "slow", long=True)
    assert status == 0, said[-2000:]
    status, ci, said = collected(*suites, "-m", "not slow")
    assert status == 0, said[-2000:]
    status, everything, said = collected(*suites)
    assert status == 0, said[-2000:]
    assert moved and moved <= everything and not moved & ci
    assert [node for node in moved if not any(with_id in node for with_id in WITH_IDS)] == []
    assert [node for node in moved if not fallback_twins(node) & ci] == []


def test_a_test_with_no_isolation_parameter_cannot_be_marked_bwrap_repeat(tmp_path: Path) -> None:
    (tmp_path / "test_alone.py").write_text("import pytest\n\n\n@pytest.mark.bwrap_repeat\ndef test_alone():\n    pass\n")
    status, _, said = collected("-p", "tests.conftest", "--rootdir", str(tmp_path), str(tmp_path / "test_alone.py"))
    assert status == 4 and "test_alone: marked bwrap_repeat, but no parameter names its isolation" in said, said


def test_every_test_listed_unmeasured_is_collected() -> None:
    """tests/unmeasured.txt names tests by node id: a renamed test must not silently go back to being measured, nor a
    stale name stay (tests/bench/unmeasured.py writes the list again)."""
    status, everything, said = collected()
    assert status == 0, said[-2000:]
    assert sorted(listed_unmeasured() - everything) == []
