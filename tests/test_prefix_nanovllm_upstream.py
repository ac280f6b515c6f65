"""nano-vllm (GeeeekExplorer/nano-vllm) at the commits of its history that matter to a prefix cache, through the
`nanovllm` shape, under the policy of each API: the old one (up to 9e8507e, hashed at allocation: `nanovllm`)
and the current one (since 8d63a98, `hash_blocks` after the forward pass: `nanovllm_v2`).

Needs a git clone of nano-vllm (never committed) and xxhash and numpy (installed from PyPI at test time); skipped
with the reason otherwise:

    git clone https://github.com/GeeeekExplorer/nano-vllm /tmp/nano-vllm
    PAGEDCHECK_NANOVLLM_GIT=/tmp/nano-vllm python -m pytest tests/test_prefix_nanovllm_upstream.py
"""

import importlib
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from oracle.family import families
from oracle.prefix import policy_for
from oracle.prefix.adapters.nanovllm import NanovllmAdapter
from oracle.runner import fuzz
from tests.test_prefix_contract_public import installed

GIT = os.environ.get("PAGEDCHECK_NANOVLLM_GIT", "")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """`checkout(commit)`: the nanovllm package at that commit, in a folder of its own."""
    if not GIT or not Path(GIT).exists():
        pytest.skip("no nano-vllm clone (set PAGEDCHECK_NANOVLLM_GIT, see this file's docstring)")
    deps = installed("nanovllm-deps", "xxhash", "numpy")
    sys.path.insert(0, str(deps))
    root = tmp_path_factory.mktemp("nano-vllm")

    def at(commit: str) -> Path:
        folder = root / commit
        if not folder.is_dir():
            folder.mkdir()
            archive = subprocess.run(["git", "-C", GIT, "archive", commit, "nanovllm"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        return folder / "nanovllm"

    yield at
    sys.path.remove(str(deps))


def block_manager(package: Path) -> SimpleNamespace:
    """BlockManager and Sequence of one checkout, imported under empty parent packages (its __init__ needs
    torch), then forgotten so the next checkout imports its own."""
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n.split(".")[0] == "nanovllm"}
    try:
        for name, path in (("nanovllm", package), ("nanovllm.engine", package / "engine")):
            sys.modules[name] = types.ModuleType(name)
            sys.modules[name].__path__ = [str(path)]
        return SimpleNamespace(BlockManager=importlib.import_module("nanovllm.engine.block_manager").BlockManager,
                               Sequence=importlib.import_module("nanovllm.engine.sequence").Sequence)
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "nanovllm"]:
            del sys.modules[name]
        sys.modules.update(saved)


def run(checkout, commit: str, seed: int, policy: str = ""):
    target = block_manager(checkout(commit))
    chosen = policy_for(NanovllmAdapter, policy, target)
    report = fuzz(families()["prefix"], f"nano-vllm@{commit}", lambda: NanovllmAdapter(target, commit, chosen),
                  examples=200, steps=50, seed=seed)
    return chosen, report


@pytest.mark.parametrize("commit", ["9fa256a", "bb823b3"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_current_api_is_green_under_nanovllm_v2(checkout, commit, seed):
    policy, report = run(checkout, commit, seed)
    assert policy.name == "nanovllm_v2"
    assert report.passed, "\n".join(report.program + [report.divergence or ""])
    assert report.stats.events["hit"] > 0


def test_f64d821_revived_block_losing_its_hash_is_found(checkout):
    policy, report = run(checkout, "f64d821", seed=1)
    assert policy.name == "nanovllm_v2" and not report.passed
    assert report.failure.difference.aspect == "hashed blocks"  # the block revived from the free list
    _, universal = run(checkout, "f64d821", seed=1, policy="any")
    assert universal.failure.difference.aspect == "no false hit"  # what it leads to: the next block chains from -1


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_9e8507e_old_api_false_hit_is_found_and_named(checkout, seed):
    policy, report = run(checkout, "9e8507e", seed)
    assert policy.name == "nanovllm"
    assert report.failure.difference.aspect == "no false hit"
    # the block, the prefix its KV was computed for, the prefix asked for
    assert re.search(r"no false hit: req \d+ block_table\[\d+\] \(block \d+\) holds the KV computed for the prefix "
                     r"\[[\d, ]+\], not the KV of the prefix asked for, \[[\d, ]+\]$", report.divergence), report.divergence
