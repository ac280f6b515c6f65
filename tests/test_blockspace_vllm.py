"""vLLM 0.6.3.post1's block manager (vllm/core/block_manager.py over vllm/core/block/) against the model under
the vllm_v0 policy, loaded from the wheel without torch (oracle/blockspace/vllm.py over oracle/vllm_wheel.py); deviations planted in a copy
are caught. The wheel is fetched at test time (`pip download --no-deps vllm==0.6.3.post1`, ~195 MB) into
~/.cache/pagedcheck (or $PAGEDCHECK_VLLM_TREE names an unzipped tree); never committed. Without it: skipped."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from oracle.blockspace import FAMILY, load_adapter
from oracle.runner import fuzz

VERSION = "0.6.3.post1"
CACHE = Path.home() / ".cache" / "pagedcheck" / f"vllm-{VERSION}"
# a planted deviation: (file under vllm/core/, a fragment of one line, what replaces it, the aspect it shows as)
PLANTED = {
    "no_copy_on_write": ("block/common.py", "return refcount <= 1", "return True", "cow pairs"),
    "copy_not_reported": ("block/naive_block.py", "self._cow_tracker.record_cow(src_block_id, trg_block_id)", "pass",
                          "cow pairs"),
    "watermark_ignored": ("block_manager.py", "num_required_blocks >= self.watermark_blocks",
                          "num_required_blocks >= 0", "can_allocate"),
    "free_leaks": ("block_manager.py", "self.block_tables[seq_id].free()", "pass", "free blocks"),
}


@pytest.fixture(scope="module")
def vllm_tree() -> Path:
    """An unzipped vllm/core of the wheel: $PAGEDCHECK_VLLM_TREE, the cache, or a fresh download into the cache."""
    named = os.environ.get("PAGEDCHECK_VLLM_TREE")
    if named:
        return Path(named)
    tree = CACHE / "tree"
    if not (tree / "vllm" / "core" / "block_manager.py").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={VERSION}", "-d",
                              str(CACHE)], capture_output=True, text=True, timeout=600)
        wheels = sorted(CACHE.glob(f"vllm-{VERSION}-*.whl"))
        if got.returncode != 0 or not wheels:
            pytest.skip(f"vLLM {VERSION}'s wheel is not available here "
                        f"(pip download failed: {got.stderr.strip()[-200:]})")
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(tree, [name for name in wheel.namelist() if name.startswith("vllm/core/")])
    return tree


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vllm_conforms_under_the_vllm_v0_policy(vllm_tree, seed):
    impl = f"vllm:{vllm_tree}"
    report = fuzz(FAMILY, impl, load_adapter(impl), examples=200, steps=30, seed=seed)
    assert report.passed, report.divergence
    assert {"swap_out", "swap_in", "fork", "recompute"} <= set(report.stats.rules)
    assert report.stats.events["swap_out_ok"] and report.stats.events["copy_on_write"]


def test_under_the_papers_rules_vllm_names_a_cpu_block_after_the_gpu_blocks(vllm_tree):
    impl = f"vllm:{vllm_tree}@paper"
    report = fuzz(FAMILY, impl, load_adapter(impl), examples=200, steps=30, seed=1)
    assert not report.passed and report.failure.difference.aspect == "swap mapping", report.divergence


@pytest.mark.parametrize("deviation", sorted(PLANTED))
def test_a_deviation_planted_in_a_copy_is_caught(vllm_tree, deviation, tmp_path):
    name, old, new, aspect = PLANTED[deviation]
    shutil.copytree(vllm_tree / "vllm" / "core", tmp_path / "vllm" / "core")
    path = tmp_path / "vllm" / "core" / name
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not one line of {name}: another vLLM version?"
    path.write_text(text.replace(old, new))
    impl = f"vllm:{tmp_path}"
    report = fuzz(FAMILY, impl, load_adapter(impl), examples=200, steps=30, seed=1)
    assert not report.passed, f"{deviation} not caught"
    assert report.failure.difference.aspect == aspect, report.divergence


def test_a_folder_without_vllm_is_a_one_line_error(tmp_path):
    with pytest.raises(ValueError, match="holds no vllm/ folder"):
        load_adapter(f"vllm:{tmp_path}")
    (tmp_path / "vllm" / "core").mkdir(parents=True)
    with pytest.raises(ValueError, match="no vllm/core/block_manager.py"):
        load_adapter(f"vllm:{tmp_path}")
    (tmp_path / "vllm" / "core" / "block_manager.py").write_text("import torch\n")
    with pytest.raises(ValueError, match="does not load here: ModuleNotFoundError"):
        load_adapter(f"vllm:{tmp_path}")


def test_an_unknown_policy_is_a_one_line_error(vllm_tree):
    with pytest.raises(ValueError, match="unknown policy 'v9'; known: paper, vllm_v0"):
        load_adapter(f"vllm:{vllm_tree}@v9")
