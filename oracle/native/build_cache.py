"""The build cache: a private folder (mode 0700, its owner checked), which no sandboxed code can see, holding
the linked programs by content; bounded (CACHE_BYTES, CACHE_ENTRIES): each new build evicts the least recently used
ones beyond the bound, sparing those used in the last IN_USE_SECONDS (a grading running beside this one may be using
them)."""

import hashlib
import os
import shutil
import time
from pathlib import Path

CACHE_BYTES = 512 << 20  # the build cache's bound, in bytes and in builds
CACHE_ENTRIES = 500
IN_USE_SECONDS = 900.0


def private_cache(path: Path | None = None) -> Path:
    """The build cache: `path`, or one per user under $XDG_CACHE_HOME (~/.cache). Created with mode 0700;
    refused (RuntimeError) when another user owns it or others may write into it, since a program found
    there is run."""
    if path is None:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = base / "pagedcheck" / "build"
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.lstat()
    if path.is_symlink() or info.st_uid != os.geteuid():
        raise RuntimeError(f"build cache {path} is not owned by this user: refusing to run programs from it")
    if info.st_mode & 0o022:
        raise RuntimeError(f"build cache {path} is writable by other users: refusing to run programs from it")
    return path


def digest(*parts: bytes) -> str:
    """A short key for `parts` (each length-prefixed, so no two lists of parts share one)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:20]


def publish(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)  # atomic, so concurrent builds never see half a file


def _size(folder: Path) -> int:
    return sum(path.lstat().st_size for path in folder.rglob("*") if not path.is_dir())


def evict(workdir: Path, *, keep: Path | None = None, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES,
          in_use: float = IN_USE_SECONDS) -> list[Path]:
    """Removes the least recently used builds (a build's folder time is its last use) until the cache holds
    at most `max_bytes` and `max_entries`, never `keep` nor a build used in the last `in_use` s; the builds
    removed, oldest first."""
    builds = []
    for folder in workdir.glob("build-*"):
        try:
            builds.append((folder.stat().st_mtime, folder, _size(folder)))
        except OSError:  # removed by a grading beside this one
            continue
    builds.sort(key=lambda build: build[0])
    total, count, now, removed = sum(size for _, _, size in builds), len(builds), time.time(), []
    for used, folder, size in builds:
        if total <= max_bytes and count <= max_entries:
            break
        if folder == keep or now - used < in_use:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        total, count = total - size, count - 1
        removed.append(folder)
    return removed
