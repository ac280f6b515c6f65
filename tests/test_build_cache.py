"""oracle.hw3.c.build's cache: keyed by the sandbox's isolation, bounded, evicting the least recently used."""

import os
import time
from pathlib import Path

import pytest

from oracle import isolation
from oracle.hw3.c.build import build
from oracle.native.build_cache import evict
from oracle.sandbox import Sandbox
from tests.conftest import REFERENCE_C


def _builds(cache: Path, sizes: list[int], ages: list[float]) -> list[Path]:
    """Build folders of `sizes` bytes, last used `ages` seconds ago."""
    folders = []
    for n, (size, age) in enumerate(zip(sizes, ages)):
        folder = cache / f"build-{n:04d}"
        folder.mkdir()
        (folder / "driver").write_bytes(b"x" * size)
        when = time.time() - age
        os.utime(folder, (when, when))
        folders.append(folder)
    return folders


def test_the_cache_evicts_the_least_recently_used_builds_past_its_size(tmp_path: Path) -> None:
    old, older, oldest, fresh = _builds(tmp_path, [400, 400, 400, 400], [2000, 3000, 4000, 10])
    removed = evict(tmp_path, max_bytes=1000, max_entries=100, in_use=900)
    assert removed == [oldest, older] and old.exists() and fresh.exists()


def test_the_cache_evicts_past_its_count(tmp_path: Path) -> None:
    folders = _builds(tmp_path, [10] * 5, [5000, 4000, 3000, 2000, 1000])
    assert evict(tmp_path, max_bytes=1 << 30, max_entries=2, in_use=900) == folders[:3]
    assert sorted(tmp_path.iterdir()) == folders[3:]


def test_a_build_just_made_or_in_use_is_never_evicted(tmp_path: Path) -> None:
    kept, in_use = _builds(tmp_path, [1000, 1000], [9000, 60])
    assert evict(tmp_path, keep=kept, max_bytes=10, max_entries=0, in_use=900) == []
    assert kept.exists() and in_use.exists()


def test_a_build_is_made_again_under_another_isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same source, one cache: built with bubblewrap (or this machine's isolation), then where bwrap
    fails; the second build is its own folder, not the first one reused."""
    cache = tmp_path / "cache"
    with Sandbox() as first:
        one = build(REFERENCE_C, cache, first)
    monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
    monkeypatch.setattr(isolation, "_probed", {})
    with Sandbox() as second:
        assert second.isolation != first.isolation or pytest.skip("no bubblewrap here: one isolation only")
        two = build(REFERENCE_C, cache, second)
    assert one.ok and two.ok and one.driver is not None and two.driver is not None
    assert one.driver.parent != two.driver.parent and one.driver.exists()
    assert len(list(cache.glob("build-*"))) == 2
