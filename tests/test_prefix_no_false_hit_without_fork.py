"""The `no_false_hit` item on targets without fork (vLLM v1, nano-vllm, a user's pool without copy-on-write):
its own program (oracle/prefix/programs.py WITHOUT_FORK) leaves a chain's tail cached behind a miss and reuses
cached blocks, with no fork. Our engine driven through the adapter contract (tests/prefix_contract/
lab_as_contract.py: look-ups, no fork, the index not shown) passes it; the same adapter over a copy of the engine
with a stale index entry planted (eviction forgets the entry) or with look-ups that walk past a miss fails it,
on the program's first look-up; old nano-vllm's stale entry checked against the block's own tokens fails it at
step 22."""

import re
import shutil
import sys

import pytest

from oracle.grading.grader import NotApplicable
from oracle.prefix import load_adapter
from oracle.grading.python_family import Submission as PrefixSubmission
from oracle.prefix.checks import CHECKS
from oracle.prefix.programs import BY_ITEM, WITHOUT_FORK, program_for
from tests.conftest import ROOT, patched

ENGINE = ROOT / "engine" / "prefix"
ADAPTER = ROOT / "tests" / "prefix_contract" / "lab_as_contract.py"


@pytest.fixture(scope="module")
def forkless(tmp_path_factory):
    """`forkless(variant, cls)`: an adapter spec driving a copy of our engine (with a broken variant's patch, or
    none) through the contract adapter `cls`, which has no fork."""
    root = tmp_path_factory.mktemp("forkless")
    sys.path.insert(0, str(root))

    def make(variant: str, cls: str) -> str:
        package = root / f"forkless_{variant or 'correct'}"
        if not package.is_dir():
            shutil.copytree(ENGINE, package, ignore=shutil.ignore_patterns("__pycache__"))
            if variant:
                patch = ROOT / "tests" / "broken_prefix" / f"{variant}.patch"
                name = re.search(r"^\+\+\+ b/engine/prefix/(\S+)", patch.read_text(), re.M)[1]
                (package / name).write_text(patched((ENGINE / name).read_text(), patch))
            (root / f"{package.name}_adapter.py").write_text(ADAPTER.read_text().replace("engine.prefix", package.name))
        return f"{root / package.name}_adapter.py:{cls}"

    yield make
    sys.path.remove(str(root))


def no_false_hit(spec: str):
    return CHECKS["no_false_hit"].run(PrefixSubmission(spec, load_adapter(spec)), {})


def test_the_program_without_fork_is_chosen_only_for_targets_without_fork():
    assert "fork" not in WITHOUT_FORK["no_false_hit"].ops and "fork" in BY_ITEM["no_false_hit"].ops
    assert program_for("no_false_hit", {"lookup", "append", "fork"}) is BY_ITEM["no_false_hit"]
    assert program_for("no_false_hit", {"lookup", "append"}) is WITHOUT_FORK["no_false_hit"]
    assert program_for("copy_on_write", set()) is BY_ITEM["copy_on_write"]  # no program does without its fork


def test_a_correct_pool_without_fork_passes(forkless):
    outcome = no_false_hit(forkless("", "LabPoolDeclaredRight"))
    assert outcome.passed and outcome.message == "", outcome.message


def test_a_shape_without_fork_or_look_up_passes_it():
    """Each look-up is replayed as an admission and a free."""
    outcome = no_false_hit("minivllm:tests.prefix_shapes.minivllm_shape")
    assert outcome.passed and outcome.message == "", outcome.message


@pytest.mark.parametrize("policy", ["", "@any"])
def test_old_nano_vllms_stale_entry_checked_by_own_tokens_fails_it(policy):
    """The nanovllm test shape keeps a reused block's entry and checks a hit against the block's own tokens, as
    nano-vllm did up to 9e8507e: the block that held [7] * 8's second half, reused after [8, 8, 8, 8], hits."""
    outcome = no_false_hit(f"nanovllm:tests.prefix_shapes.nanovllm_shape{policy}")
    assert not outcome.passed
    assert outcome.message.startswith("no false hit: step 22 admit(req 9, tokens [7, 7, 7, 7, 7, 7, 7, 7, 5]): req 9 "
                                      "block_table[1]"), outcome.message  # the aspect said once


def test_vllm_v1_passes_it_and_its_free_order_keeps_the_head_cached():
    """vLLM's index keeps both blocks of [1..4] (a multimap, the first wins): the look-ups hit block 1, never 4.
    Skipped without an unzipped vLLM 0.33.0 (tests/test_prefix_vllm.py fetches one)."""
    from tests.test_prefix_vllm import CACHE

    if not (CACHE / "vllm" / "v1" / "core" / "block_pool.py").is_file():
        pytest.skip(f"no unzipped vLLM in {CACHE} (python -m pytest tests/test_prefix_vllm.py makes it)")
    outcome = no_false_hit(f"vllm:{CACHE}")
    assert outcome.passed and outcome.message == "", outcome.message


@pytest.mark.parametrize("variant, cls, first_hit", [
    ("eviction_keeps_index", "LabPoolDeclaredRight", "expected 0 hits, got 2"),  # the stale entry for [1..4]
    ("hits_past_first_miss", "LabPoolDeclaredRight", "expected 0 hits, got 1"),  # [1..8]'s block behind a miss
])
def test_a_planted_false_hit_fails_it_on_a_pool_without_fork(forkless, variant, cls, first_hit):
    outcome = no_false_hit(forkless(variant, cls))
    assert not outcome.passed
    assert outcome.message.startswith("no false hit: step 7 get_computed_blocks(tokens [1..8, 10])"), outcome.message
    assert first_hit in outcome.message and "[rule: no_false_hit]" in outcome.message


def test_a_pool_with_fork_keeps_the_forking_program(forkless):
    outcome = no_false_hit("engine")
    assert outcome.passed and outcome.message == ""


def test_a_pool_without_a_prefix_cache_is_still_not_applicable():
    with pytest.raises(NotApplicable, match="no prefix cache"):
        no_false_hit("yaie:tests.prefix_shapes.yaie_shape")
