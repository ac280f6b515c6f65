"""Teeth for the prefix family: the machine must catch each deliberately broken variant of our engine
(engine/prefix), and its first-divergence line must name the aspect of the bug.

Each tests/broken_prefix/<variant>.patch changes one behaviour of one file of engine/prefix; the fixture
copies the package, applies the patch (conftest.patched_copy) and imports the copy by a name of its own.
Fixed seed and budget: a variant that stops being caught means generation needs tuning, not a looser test.
"""

import re
import sys
from pathlib import Path

import pytest

from oracle.family import families
from oracle.runner import fuzz
from tests.conftest import ROOT, patched_copy
from tests.fixtures import PREFIX_FUZZ

SEED, EXAMPLES, STEPS = 0, 300, 20
BROKEN = Path(__file__).parent / "broken_prefix"
ENGINE = ROOT / "engine" / "prefix"


@pytest.fixture(scope="session")
def broken_engine(tmp_path_factory: pytest.TempPathFactory):
    """`broken_engine(variant)`: the importable name of engine/prefix with that variant's patch applied."""
    root = tmp_path_factory.mktemp("broken_prefix")
    sys.path.insert(0, str(root))

    def materialise(variant: str) -> str:
        return patched_copy(BROKEN / f"{variant}.patch", ENGINE, root / f"broken_prefix_{variant}").name

    yield materialise
    sys.path.remove(str(root))


def run(impl: str):
    family = families()["prefix"]
    return fuzz(family, impl, family.load_adapter(impl), examples=EXAMPLES, steps=STEPS, seed=SEED)


def test_every_broken_variant_has_an_expected_aspect():
    assert {p.stem for p in BROKEN.glob("*.patch")} == PREFIX_FUZZ.keys()


@pytest.mark.parametrize("variant", sorted(PREFIX_FUZZ))
def test_prefix_machine_catches_broken_variant_naming_its_aspect(variant, broken_engine):
    report = run(f"lab:{broken_engine(variant)}")
    assert not report.passed, f"{variant} not caught in {EXAMPLES} examples of {STEPS} steps (seed {SEED})"
    difference = report.failure.difference
    assert difference is not None, report.divergence
    assert difference.aspect in PREFIX_FUZZ[variant], report.divergence
    assert report.divergence.startswith(report.failure.call)
    assert report.program[-1] == "state.teardown()"


def test_builtin_prefix_engine_passes_the_same_run():
    report = run("engine")
    assert report.passed, report.divergence
