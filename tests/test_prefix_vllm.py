"""vLLM v1's own KVCacheManager (`--impl vllm:DIR`) against the model under the `vllm_v1` policy.

The wheel is fetched from PyPI at test time (never committed) and its Python files unzipped into a cache
folder, once; the tests skip with the reason when it cannot be had. To run them (or point PAGEDCHECK_VLLM at a
folder that already holds an unzipped `vllm/`):

    python -m pytest tests/test_prefix_vllm.py            # downloads vllm==0.33.0 into ~/.cache/pagedcheck
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from oracle.family import families
from oracle.prefix import load_adapter
from oracle.prefix.vllm_loader import REAL_MODULES, VllmModules, VllmNotFound
from oracle.runner import fuzz

VERSION = "0.33.0"
CACHE = Path(os.environ.get("PAGEDCHECK_CACHE", Path.home() / ".cache" / "pagedcheck")) / f"vllm-{VERSION}"


def unzipped_vllm() -> Path:
    """A folder holding vLLM 0.33.0's Python files: PAGEDCHECK_VLLM, the cache, or the wheel fetched now."""
    given = os.environ.get("PAGEDCHECK_VLLM")
    if given:
        return Path(given)
    if (CACHE / "vllm" / "v1" / "core" / "block_pool.py").is_file():
        return CACHE
    wheels = CACHE.with_name(f"vllm-{VERSION}-wheel")
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"vllm=={VERSION}",
                              "-d", str(wheels)], capture_output=True, text=True, timeout=900)
    found = sorted(wheels.glob(f"vllm-{VERSION}-*.whl"))
    if fetched.returncode or not found:
        pytest.skip(f"vLLM {VERSION}'s wheel could not be downloaded from PyPI: {fetched.stderr.strip()[-200:]}")
    partial = CACHE.with_name(CACHE.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(found[0]) as wheel:
        wheel.extractall(partial, [n for n in wheel.namelist() if n.startswith("vllm/") and n.endswith(".py")])
    partial.rename(CACHE)
    shutil.rmtree(wheels, ignore_errors=True)  # 300 MB of compiled kernels the loader never reads
    return CACHE


@pytest.fixture(scope="module")
def vllm_dir() -> Path:
    return unzipped_vllm()


def copy_of(tree: Path, into: Path) -> Path:
    """The KV-cache files of `tree` (all the loader reads), copied under `into`."""
    for name in REAL_MODULES:
        source = tree / (name.replace(".", "/") + ".py")
        if source.is_file():
            target = into / source.relative_to(tree)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    return into


def pagedcheck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).parents[1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vllm_033_agrees_with_the_model_under_vllm_v1(vllm_dir, seed):
    run = pagedcheck("fuzz", "--family", "prefix", "--impl", f"vllm:{vllm_dir}", "--seed", str(seed),
                     "--examples", "200")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "200 examples" in run.stdout and "OK: the implementation agreed" in run.stdout


def test_vllm_033_runs_reach_warm_hits_evictions_and_resets(vllm_dir):
    report = fuzz(families()["prefix"], f"vllm:{vllm_dir}", load_adapter(f"vllm:{vllm_dir}"), examples=200,
                  steps=50, seed=1)
    assert report.passed, report.divergence
    for event in ("hit", "warm_hit", "evicted_warm", "refused", "append_refused", "reset", "double_free"):
        assert report.stats.events[event] > 0, event
    assert report.stats.rules["fork"] == 0  # vLLM has no copy-on-write: the machine never draws it


def test_old_free_policy_planted_in_a_copy_is_caught(vllm_dir, tmp_path):
    """Before vLLM put blocks without a hash at the front of the free queue, it appended every freed block."""
    copy = copy_of(vllm_dir, tmp_path / "vllm-old-free")
    pool = copy / "vllm" / "v1" / "core" / "block_pool.py"
    text = pool.read_text()
    reuse_first = "if block.block_hash is None or not self.enable_caching:"
    assert text.count(reuse_first) == 1
    pool.write_text(text.replace(reuse_first, "if False:  # planted: every freed block to the tail"))
    report = fuzz(families()["prefix"], f"vllm:{copy}", load_adapter(f"vllm:{copy}"), examples=200, steps=50, seed=1)
    assert not report.passed
    assert report.failure.call.startswith("free(") and report.failure.difference.aspect == "free order"


def test_loader_keeps_copies_apart_and_off_the_vllm_name(vllm_dir, tmp_path):
    release, copy = VllmModules(str(vllm_dir)), VllmModules(str(copy_of(vllm_dir, tmp_path / "copy")))
    pools = release["vllm.v1.core.block_pool"], copy["vllm.v1.core.block_pool"]
    assert pools[0].BlockPool is not pools[1].BlockPool
    assert not any(name == "vllm" or name.startswith("vllm.") for name in sys.modules)
    assert "torch" not in sys.modules


def test_folder_without_vllm_is_a_usage_error(tmp_path):
    with pytest.raises(VllmNotFound, match="holds no vllm/ folder"):
        VllmModules(str(tmp_path))
    run = pagedcheck("fuzz", "--family", "prefix", "--impl", f"vllm:{tmp_path}")
    assert run.returncode == 2 and "holds no vllm/ folder" in run.stderr and "Traceback" not in run.stderr
