"""Teeth for the blockspace family: each deliberately broken copy of our engine (tests/broken_blockspace/*.patch,
one behaviour of one file of engine/blockspace) must fail its own rubric item, and the fuzz run must name that
item's rule. Fixed seed and budget: a variant that stops being caught means generation needs tuning."""

import sys
from pathlib import Path

import pytest

from oracle.blockspace import FAMILY, load_adapter
from oracle.blockspace.grade import GRADER
from oracle.grading.python_family import Submission
from oracle.runner import fuzz
from tests.conftest import ROOT, patched_copy
from tests.fixtures import BLOCKSPACE_FAILS, BLOCKSPACE_FUZZ_ALSO

BROKEN = Path(__file__).parent / "broken_blockspace"
ENGINE = ROOT / "engine" / "blockspace"


@pytest.fixture(scope="session")
def broken(tmp_path_factory: pytest.TempPathFactory):
    """`broken(variant)`: the importable name of engine/blockspace with that variant's patch applied."""
    root = tmp_path_factory.mktemp("broken_blockspace")
    sys.path.insert(0, str(root))

    def materialise(variant: str) -> str:
        return patched_copy(BROKEN / f"{variant}.patch", ENGINE, root / f"broken_blockspace_{variant}").name

    yield materialise
    sys.path.remove(str(root))


def test_every_variant_has_an_expected_item():
    assert {p.stem for p in BROKEN.glob("*.patch")} == BLOCKSPACE_FAILS.keys()


@pytest.mark.parametrize("variant", sorted(BLOCKSPACE_FAILS))
def test_each_variant_fails_its_own_item_and_the_fuzz_names_its_rule(variant, broken):
    impl = broken(variant)
    item, factory = BLOCKSPACE_FAILS[variant], load_adapter(impl)
    outcome = GRADER.checks[item].run(Submission(impl, factory), {})
    assert not outcome.passed and f"[rule: {item}]" in outcome.message, outcome.message
    report = fuzz(FAMILY, impl, factory, examples=300, steps=30, seed=0)
    assert not report.passed, f"{variant} not caught by fuzzing"
    assert report.failure.rule in {item} | BLOCKSPACE_FUZZ_ALSO.get(variant, set()), report.divergence
    assert report.divergence.startswith(report.failure.call) and report.program[-1] == "state.teardown()"


@pytest.mark.parametrize("variant", sorted(BLOCKSPACE_FAILS))
def test_each_variant_costs_no_other_directed_item(variant, broken):
    """Another item's program that meets the bug passes, excused by the variant's own item (grader.py, Excuse; the
    settlement charges the excused item too only where it was stopped by an item worth fewer points)."""
    impl = broken(variant)
    for item, check in GRADER.checks.items():
        if item not in ("fuzz", BLOCKSPACE_FAILS[variant]):
            outcome = check.run(Submission(impl, load_adapter(impl)), {})
            assert outcome.passed, (item, outcome.message)
            assert all(excuse.owners == {BLOCKSPACE_FAILS[variant]} for excuse in outcome.excuse or ()), (item, outcome.message)


def test_the_engine_passes_every_directed_item():
    for item, check in GRADER.checks.items():
        if item != "fuzz":
            outcome = check.run(Submission("engine", load_adapter("engine")), {})
            assert outcome.passed and outcome.excuse is None, (item, outcome.message)
