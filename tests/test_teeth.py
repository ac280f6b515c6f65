"""Teeth: the real machine must catch each deliberately broken engine, and name the bug in its first line.

Each tests/broken/<variant>.patch changes one behaviour of engine/llm_memory.py (applied into a scratch copy:
tests/conftest.py, broken_python). A green machine run proves nothing unless the same run goes red on these; the
expected pattern (tests/fixtures.py, HW3_PYTHON_FUZZ) pins that the divergence is reported where a person would
look for that bug, not as some later knock-on effect. Fixed seed and budget: the run is reproducible, and a
variant that stops being caught means generation needs tuning, not a looser test.
"""

import re
import struct

import pytest

from oracle.family import families
from oracle.hw3.adapters import load_python
from oracle.runner import fuzz
from tests.conftest import BROKEN_PYTHON, broken_python
from tests.fixtures import HW3_PYTHON_FUZZ, HW3_PYTHON_WHITE_BOX_ONLY

SEED, EXAMPLES, STEPS = 0, 300, 10
# The cap takes a pool of >= 256 blocks and a sequence filled to 4096 records inside 10 steps: about one
# program in 30 gets there, so these get a larger budget (a run stops at its first failure anyway); so does an
# append refused at an L2 boundary of an exhausted pool, which the draws reach early or late depending on the
# literal constants of the modules loaded beside them (Hypothesis draws from those too).
EXAMPLES_FOR = {"cap_one_early": 1000, "cap_one_late": 1000, "oom_append_allocates_l2": 1000}


def run(impl: str, examples: int = EXAMPLES):
    return fuzz(families()["hw3"], impl, load_python(impl), examples=examples, steps=STEPS, seed=SEED)


def test_every_broken_variant_is_either_fuzzed_or_declared_white_box_only():
    variants = {p.stem for p in BROKEN_PYTHON.glob("*.patch")}
    assert variants == HW3_PYTHON_FUZZ.keys() | HW3_PYTHON_WHITE_BOX_ONLY
    assert len(HW3_PYTHON_FUZZ) >= 8


@pytest.mark.parametrize("variant", sorted(HW3_PYTHON_FUZZ))
def test_machine_catches_broken_variant_with_the_expected_first_divergence(variant):
    examples = EXAMPLES_FOR.get(variant, EXAMPLES)
    report = run(broken_python(variant), examples)
    assert not report.passed, f"{variant} not caught in {examples} examples of {STEPS} steps (seed {SEED})"
    match = re.match(HW3_PYTHON_FUZZ[variant], report.divergence)
    assert match, report.divergence
    assert report.program[-1] == "state.teardown()"
    if variant == "big_endian":  # the record holds the expected value's bytes reversed
        want, got = int(match["want"]), int(match["got"])
        assert got == struct.unpack(">i", struct.pack("<i", want))[0] != want


def test_builtin_engine_passes_the_same_run():
    """Also run last, so a variant that leaked a patch into engine.llm_memory would show up here."""
    report = run("engine.llm_memory")
    assert report.passed, report.divergence
    assert report.stats.examples >= EXAMPLES
