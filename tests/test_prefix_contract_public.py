"""Pools nobody here wrote, installed from PyPI at test time (never committed), driven through the adapter
contract by the adapter files in tests/prefix_contract/ (the worked example of oracle/prefix/README.md).
Skipped, with the reason, when PyPI cannot be reached. To run:

    python -m pytest tests/test_prefix_contract_public.py     # installs into ~/.cache/pagedcheck/pools
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

POOLS = Path(os.environ.get("PAGEDCHECK_CACHE", Path.home() / ".cache" / "pagedcheck")) / "pools"
NANO = "tests/prefix_contract/nanovllm_fork_adapter.py:NanoVllmForkAdapter"


def installed(name: str, *packages: str) -> Path:
    """A folder holding `packages` (pip install --no-deps --target), installed once into the cache."""
    folder = POOLS / name
    if not (folder / ".complete").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder),
                               *packages], capture_output=True, text=True, timeout=900)
        if done.returncode:
            pytest.skip(f"{' '.join(packages)} could not be installed from PyPI: {done.stderr.strip()[-200:]}")
        (folder / ".complete").touch()
    return folder


def fuzz(impl: str, *path: Path, seed: int = 1, examples: int = 200) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    return subprocess.run([sys.executable, "-m", "oracle.cli", "fuzz", "--family", "prefix", "--impl", impl,
                           "--seed", str(seed), "--examples", str(examples)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=900)


@pytest.fixture(scope="module")
def nanovllm_fork() -> Path:
    return installed("nano-vllm-fork-20260210", "nano-vllm-fork==20260210", "xxhash", "numpy")


def test_adapter_files_are_short():
    for name in ("nanovllm_fork_adapter.py", "smol_vllm_adapter.py"):
        lines = (ROOT / "tests" / "prefix_contract" / name).read_text().splitlines()
        assert len([line for line in lines if line.strip()]) <= 40, name


# CI fuzzes each release on one seed (200 programs); the long profile on three
SEEDS = [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)]


@pytest.mark.parametrize("seed", SEEDS)
def test_nanovllm_fork_agrees_with_the_policy_its_adapter_declares(nanovllm_fork, seed):
    run = fuzz(NANO, nanovllm_fork, seed=seed)
    assert run.returncode == 0 and "OK: the implementation agreed" in run.stdout, run.stdout + run.stderr


def test_nanovllm_fork_hits_a_whole_prompt(nanovllm_fork):
    """A real bug of the release: a prompt whose every block is cached hits them all, so its model runner
    prefills zero tokens for it and samples from the logits of the token before (cu_seqlens_q[1:] - 1)."""
    run = fuzz("tests/prefix_contract/nanovllm_fork_capped.py:CappedNanoVllmFork@any", nanovllm_fork)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "hit cap: expected at most (num_tokens - 1) // block_size = 0 hits, got 1" in run.stdout


def test_stale_index_entry_planted_in_a_copy_is_a_false_hit_under_any(nanovllm_fork, tmp_path):
    """Without deallocate's clean-up of the index (the old nano-vllm's false hit), @any finds the false hit."""
    shutil.copytree(nanovllm_fork / "nanovllm", tmp_path / "nanovllm")
    manager = tmp_path / "nanovllm" / "engine" / "block_manager.py"
    text = manager.read_text()
    clean_up = "                if block.hash != -1:\n                    cached_id"
    assert text.count(clean_up) == 1
    manager.write_text(text.replace(clean_up, "                if False:  # planted\n                    cached_id"))
    run = fuzz(f"{NANO}@any", tmp_path, nanovllm_fork)
    assert run.returncode == 1 and "no false hit" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("seed", SEEDS)
def test_smol_vllm_agrees_with_the_policy_its_adapter_declares(seed):
    folder = installed("smol-vllm-0.1.2", "smol-vllm==0.1.2")
    run = fuzz("tests/prefix_contract/smol_vllm_adapter.py:SmolVllmAdapter", folder, seed=seed)
    assert run.returncode == 0 and "OK: the implementation agreed" in run.stdout, run.stdout + run.stderr
