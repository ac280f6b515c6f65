"""Teeth: the real machine must catch each deliberately broken engine, and name the bug in its first line.

Each tests/broken/<variant>.py changes one behaviour of engine.llm_memory. A green machine run proves
nothing unless the same run goes red on these; the expected pattern pins that the divergence is reported
where a person would look for that bug, not as some later knock-on effect. Fixed seed and budget: the run
is reproducible, and a variant that stops being caught means generation needs tuning, not a looser test.
"""

import re
import struct
from pathlib import Path

import pytest

from oracle.family import families
from oracle.hw3.adapters import load_python
from oracle.runner import fuzz

SEED, EXAMPLES, STEPS = 0, 300, 10
BROKEN_DIR = Path(__file__).parent / "broken"
N = r"-?\d+"

# variant -> the first-divergence line it must produce
EXPECTED = {
    "no_cow": r"^(return value: expected -1, got 0|free_local_blocks: expected \d+, got \d+|ref_count\[\d+\]: expected \d+, got \d+) after append_kv",
    "last_fit": rf"^(ref_count\[\d+\]: expected 1, got 0|seq {N} block_table\[\d+\]\[\d+\]: expected \d+, got \d+) after (create_sequence|append_kv)",
    "zero_on_create": rf"^(seq {N} record \d+ \(block \d+\)|pool block \d+ slot \d+ \(byte \d+\)): expected {N}, got 0 after create_sequence",
    "oom_append_allocates_l2": rf"^seq {N} block_table\[\d+\]: expected NULL, got an L2 table after append_kv\(engine, {N}, {N}\)",
    "cow_copies_written_only": rf"^pool block \d+ slot \d+ \(byte \d+\): expected {N}, got {N} after append_kv",
    "fork_no_incref": r"^ref_count\[\d+\]: expected \d+, got \d+ after fork_sequence",
    "free_count_not_incremented": r"^free_local_blocks: expected \d+, got \d+ after free_sequence",
    "create_at_head": r"^active list: expected \[.*\], got \[.*\] after create_sequence",
    "cow_no_oom_check": rf"^append_kv\(engine, {N}, {N}\) raised AssertionError: allocate_block called with no free block",
    "big_endian": rf"^seq {N} record \d+ \(block \d+\): expected (?P<want>{N}), got (?P<got>{N}) after append_kv",
    "destroy_returns_minus_one": r"^return value: expected 0, got -1 after llm_destroy\(engine\)$",
    "cap_one_early": rf"^return value: expected 0, got -1 after append_kv\(engine, {N}, {N}\)",
    "cap_one_late": rf"^(append_kv\(engine, {N}, {N}\) raised IndexError|return value: expected -1, got 0 after append_kv)",
}
# invisible through the API: see test_engine_rules; probe_bugs holds one variant per white-box probe (test_pyprobes)
WHITE_BOX_ONLY = {"free_breaks_at_null_l1", "fork_breaks_at_null_l1", "probe_bugs"}
# The cap takes a pool of >= 256 blocks and a sequence filled to 4096 records inside 10 steps: about one
# program in 30 gets there, so these get a larger budget (a run stops at its first failure anyway); so does an
# append refused at an L2 boundary of an exhausted pool, which the draws reach early or late depending on the
# literal constants of the modules loaded beside them (Hypothesis draws from those too).
EXAMPLES_FOR = {"cap_one_early": 1000, "cap_one_late": 1000, "oom_append_allocates_l2": 1000}


def run(impl: str, examples: int = EXAMPLES):
    return fuzz(families()["hw3"], impl, load_python(impl), examples=examples, steps=STEPS, seed=SEED)


def test_every_broken_variant_is_either_fuzzed_or_declared_white_box_only():
    variants = {p.stem for p in BROKEN_DIR.glob("*.py")} - {"__init__"}
    assert variants == EXPECTED.keys() | WHITE_BOX_ONLY
    assert len(EXPECTED) >= 8


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_machine_catches_broken_variant_with_the_expected_first_divergence(variant):
    examples = EXAMPLES_FOR.get(variant, EXAMPLES)
    report = run(f"tests.broken.{variant}", examples)
    assert not report.passed, f"{variant} not caught in {examples} examples of {STEPS} steps (seed {SEED})"
    match = re.match(EXPECTED[variant], report.divergence)
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
