"""Optional: the oracle against the real nano-vllm block manager from PyPI (`nano-vllm-fork`), under its
own policy. Skipped when the package is absent; never vendored. Its package __init__ imports torch, so
the test loads `nanovllm.engine.block_manager` and `nanovllm.engine.sequence` under empty parent packages.

    pip install --no-deps --target /tmp/nanovllm nano-vllm-fork xxhash numpy
    PAGEDCHECK_NANOVLLM=/tmp/nanovllm python -m pytest tests/test_prefix_nanovllm_real.py
"""

import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from oracle.family import families
from oracle.prefix.adapters.nanovllm import NanovllmAdapter
from oracle.prefix.policy import NANOVLLM_FORK
from oracle.runner import fuzz


@pytest.fixture(scope="module")
def nanovllm():
    extra = os.environ.get("PAGEDCHECK_NANOVLLM")
    if extra:
        sys.path.insert(0, extra)
    spec = importlib.util.find_spec("nanovllm")
    if spec is None or importlib.util.find_spec("xxhash") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("nano-vllm-fork, xxhash or numpy not installed (see this file's docstring)")
    root = Path(spec.submodule_search_locations[0])
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "nanovllm"}
    for name, path in (("nanovllm", root), ("nanovllm.engine", root / "engine")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
    try:
        yield SimpleNamespace(BlockManager=importlib.import_module("nanovllm.engine.block_manager").BlockManager,
                              Sequence=importlib.import_module("nanovllm.engine.sequence").Sequence)
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "nanovllm"]:
            del sys.modules[name]
        sys.modules.update(saved)
        if extra:
            sys.path.remove(extra)


def test_real_nanovllm_block_manager_agrees_with_its_policy(nanovllm):
    report = fuzz(families()["prefix"], "nano-vllm-fork", lambda: NanovllmAdapter(nanovllm, "nano-vllm-fork", NANOVLLM_FORK),
                  examples=200, steps=30, seed=0)
    assert report.passed, "\n".join(report.program + [report.divergence])
    assert report.stats.events["hit"] > 0
