"""The adapter contract (oracle/prefix/adapters/contract.py): a user's adapter class given to --impl, the pools
it declares, the policy it declares from named choices, and the one-line errors for a class that breaks it."""

import subprocess
import sys
import warnings

import pytest
from hypothesis.errors import HypothesisDeprecationWarning

from oracle.family import families
from oracle.prefix import load_adapter
from oracle.prefix.policy import declared
from oracle.runner import fuzz
from tests.conftest import ROOT
from tests.prefix_contract.toy_pools import PowerOfTwoPool

TOYS = "tests/prefix_contract/toy_pools.py"


def run(impl: str, examples: int = 100, seed: int = 1):
    return fuzz(families()["prefix"], impl, load_adapter(impl), examples=examples, steps=30, seed=seed)


def test_machine_makes_only_the_pools_the_adapter_declares():
    PowerOfTwoPool.made.clear()
    report = run("tests.prefix_contract.toy_pools:PowerOfTwoPool")  # by module name: the class imported here
    assert report.passed, report.divergence
    sizes = set(PowerOfTwoPool.made)
    assert {b for b, _ in sizes} == {4, 8} and {s for _, s in sizes} == {2, 4}  # all of them, and nothing else


def test_shrinking_stays_in_the_declared_pools():
    report = run(f"{TOYS}:LeakyPool")
    assert report.failure.difference.aspect == "conservation"
    start = next(line for line in report.program if "state.start(" in line)
    assert "block_size=2" in start and "num_blocks=4" in start  # the smallest declared, never 0 or 1


def test_a_failing_prefix_fuzz_warns_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run(f"{TOYS}:LeakyPool")
    assert not report.passed
    assert not [w for w in caught if issubclass(w.category, HypothesisDeprecationWarning)], caught


def test_declared_policy_is_checked_exactly_and_any_only_universally():
    """Our lab engine (one block per hash, the last writer wins, every freed block to the tail): declared as it
    is, it passes; declared as vLLM's design (a multimap, unhashed blocks to the front) it fails on what it
    does differently; with @any it passes whatever it declared."""
    pools = "tests/prefix_contract/lab_as_contract.py"
    assert run(f"{pools}:LabPoolDeclaredRight", examples=200).passed
    wrong = run(f"{pools}:LabPoolDeclaredAsVllm", examples=200)
    assert not wrong.passed and wrong.failure.difference.aspect in ("free order", "index", "hits"), wrong.divergence
    assert run(f"{pools}:LabPoolDeclaredAsVllm@any", examples=200).passed
    assert run(f"{pools}:LabPool@any", examples=200).passed


def test_named_choices_make_a_policy():
    policy = declared({"index": "multimap", "warm_reuse": False, "hit_cap": False, "free_order": "lifo"})
    assert (policy.duplicates, policy.warm, policy.hit_cap, policy.free_order) == ("first", False, False, "lifo")
    with pytest.raises(ValueError, match="'index' is one of 'multimap', 'last_writer', 'give_back', not 'tree'"):
        declared({"index": "tree"})
    with pytest.raises(ValueError, match="unknown policy choice 'colour'"):
        declared({"colour": "blue"})


@pytest.mark.parametrize("impl, message", [
    (f"{TOYS}:NoObserve", "NoObserve has no observe (the adapter contract: oracle/prefix/README.md)"),
    (f"{TOYS}:PowerOfTwoPool.made", "has no attribute"),
    (f"{TOYS}:TOYS_MISSING", "has no attribute 'TOYS_MISSING'"),
    ("tests/prefix_contract/no_such_file.py:Pool", "no such file"),
])
def test_a_class_that_breaks_the_contract_is_one_line(impl, message):
    with pytest.raises(ValueError) as failure:
        load_adapter(impl)
    assert message in str(failure.value) and "\n" not in str(failure.value)


def test_cli_takes_an_adapter_class_and_refuses_a_bad_one_with_exit_2():
    ok = subprocess.run([sys.executable, "-m", "oracle.cli", "fuzz", "--family", "prefix", "--impl",
                         f"{TOYS}:PowerOfTwoPool", "--examples", "20", "--seed", "1"], capture_output=True, text=True,
                        cwd=ROOT, timeout=300)
    assert ok.returncode == 0 and "OK: the implementation agreed" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([sys.executable, "-m", "oracle.cli", "fuzz", "--family", "prefix", "--impl", f"{TOYS}:NoObserve"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and "NoObserve has no observe" in bad.stderr and "Traceback" not in bad.stderr
