"""The Python runtime of the Landlock fallback: a private copy of the system Python whose access times no run
can change (issue 17; oracle/SANDBOX.md).

Without a mount namespace a run reads the host's own /usr, where reading a file writes its access time
(relatime: when the atime is a day old, or not newer than the file's mtime and ctime). A run could mark a file
chosen by its calls, and a later run (a second opinion, oracle/hw3/alone.py) read the mark. So a Python run under
Landlock reads no file of the host's: only this copy, its own areas and a few devices. The copy holds the
interpreter, its standard library and the system's dist-packages, every shared library those load (found by
ldd), the dynamic loader, and the three programs every run's supervisor needs (sh, bash, setpriv,
oracle/isolation.py). Every program of the copy is started through the copied loader (`--library-path`), so no
run opens the host's loader or libraries.

Every file and folder of the copy, and of a run's readable areas, gets one access time in the future
(`FROZEN_NS`, `freeze`): relatime never updates an atime newer than now (nor noatime); under strictatime every
read writes it, so the grader resets it before each process (`Runtime.before_run`). No run may set a time
itself (oracle/seccomp.py refuses utime, utimes, futimesat and utimensat).

The copy is built once per interpreter (at most KEEP copies, the least recently used removed first) and read in
place: in the user's cache, $XDG_CACHE_HOME/pagedcheck/runtime (mode 0700), where every run has the grader's uid;
for a root grader, whose runs each have a uid of their own, in SHARED (mode 0711: passed through, not listed).
Never in a sandbox's own folder: that is on the batch's temporary disk, which a submission may fill
(tests/test_tamper_review3a.py's disk_fill), and the copy is about 185 MB.
"""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from oracle.hypothesis_home import cache_home

PYTHON = "/usr/bin/python3"  # the system Python every Python submission runs under
FROZEN_NS = 4_000_000_000 * 10**9  # 2096-10-02: an access time in the future, which relatime never updates
KEEP = 2  # runtimes kept in the cache (one per interpreter version)
_FORMAT = "1"  # bumped when the copy's layout changes: older copies are then rebuilt
_TOOLS = ("sh", "bash", "setpriv")  # what the supervisor runs (oracle/isolation.py), found on the run's PATH
_SKIPPED = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")  # of the stdlib: no grader runs these
_LIBRARY = re.compile(r"^\s*(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)$")  # ldd's "name => /path (0x...)" or "/path (0x...)"


def atime_mode(path: Path) -> str:
    """How the mount holding `path` writes access times: "noatime", "relatime" or "strictatime"
    (/proc/self/mountinfo; the longest mount point above `path` wins)."""
    path = Path(os.path.realpath(path))
    best, options = Path("/"), ""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "strictatime"
    for line in lines:
        fields = line.split()
        point = Path(fields[4].replace("\\040", " "))
        if path.is_relative_to(point) and len(point.parts) >= len(best.parts):
            best, options = point, fields[5]
    flags = options.split(",")
    return "noatime" if "noatime" in flags else "relatime" if "relatime" in flags else "strictatime"


def freeze(paths: Iterable[Path]) -> None:
    """Gives every file, folder and symbolic link under `paths` the access time FROZEN_NS (their mtime kept),
    where it has another; paths that do not exist, or whose times we may not set, are left as they are."""
    for top in paths:
        for path in _walk(Path(top)):
            try:
                stat = os.lstat(path)
                if stat.st_atime_ns != FROZEN_NS:
                    os.utime(path, ns=(FROZEN_NS, stat.st_mtime_ns), follow_symlinks=False)
            except OSError:
                pass


def _walk(top: Path) -> Iterable[str]:
    if not top.is_dir() or top.is_symlink():
        yield str(top)
        return
    for folder, dirs, files in os.walk(top):
        yield folder
        for name in [*dirs, *files]:
            if name in dirs and not os.path.islink(os.path.join(folder, name)):
                continue  # a folder: yielded when walked
            yield os.path.join(folder, name)


@dataclass(frozen=True)
class Runtime:
    """A frozen copy of the system Python (see the module's text): `root` is all a Python run may read of it."""

    root: Path
    python: Path  # root/bin/pythonX.Y

    @property
    def _loader(self) -> list[str]:
        return [str(self.root / "libs" / "ld.so"), "--inhibit-cache", "--library-path", str(self.root / "libs")]

    def command(self, program: str | Path) -> list[str]:
        """The argv prefix that runs `program` of the copy ("python", or one of the supervisor's tools)."""
        return [*self._loader, str(self.python if program == "python" else self.root / "bin" / str(program))]

    def before_run(self) -> None:
        """Puts back the frozen access times where the mount writes one at every read (strictatime)."""
        if atime_mode(self.root) == "strictatime":
            freeze([self.root])


SHARED = Path("/var/cache/pagedcheck/runtime")  # a root grader's: its runs' uids pass through, on the system's disk


def python_runtime(folder: Path | None = None, *, traversable: bool = False) -> Runtime:
    """The runtime of the system Python in `folder` (default: the user's cache; made 0700 if missing, 0711 if
    `traversable`: for runs of other uids, which may pass through but not list it), built when missing or stale.
    OSError when another user owns the folder or others may write into it."""
    folder = cache_home() / "runtime" if folder is None else folder
    folder.mkdir(mode=0o711 if traversable else 0o700, parents=True, exist_ok=True)
    if traversable:
        for up in [folder, *folder.parents][:-1]:  # not the root itself
            if up.stat().st_uid == os.geteuid():
                up.chmod(up.stat().st_mode & 0o7777 | 0o111)
    mine = folder.lstat()
    if mine.st_uid != os.geteuid() or mine.st_mode & 0o022 or folder.is_symlink():
        raise OSError(f"the Python runtime's cache {folder} is not this user's alone: refusing to run programs from it")
    python = Path(os.path.realpath(PYTHON))
    version = python.name.removeprefix("python")
    info = python.stat()
    key = hashlib.sha256(repr((_FORMAT, str(python), info.st_mtime_ns, info.st_size)).encode()).hexdigest()[:16]
    root = folder / f"python{version}-{key}"
    if not (root / "complete").exists():
        _build(folder, root, python, version)
    os.utime(root, ns=(FROZEN_NS, time.time_ns()))  # its mtime: when it was last used (the least recent goes first)
    _bound(folder, keep=root)
    return Runtime(root, root / "bin" / python.name)


def _build(folder: Path, root: Path, python: Path, version: str) -> None:
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
    try:
        (work / "bin").mkdir()
        (work / "libs").mkdir()
        shutil.copy2(python, work / "bin" / python.name)
        for tool in _TOOLS:
            found = shutil.which(tool, path="/usr/bin:/bin")
            if found:
                shutil.copy2(os.path.realpath(found), work / "bin" / tool)
        prefix = Path("/usr")
        stdlib = prefix / "lib" / f"python{version}"
        shutil.copytree(stdlib, work / "lib" / stdlib.name, symlinks=False,
                        ignore=lambda at, names: [n for n in names if n.endswith(".a")
                                                  or (Path(at) == stdlib and n in _SKIPPED)])
        for site in (prefix / "lib" / "python3" / "dist-packages",
                     prefix / "local" / "lib" / stdlib.name / "dist-packages"):
            if site.is_dir():
                shutil.copytree(site, work / site.relative_to(prefix), symlinks=False, ignore_dangling_symlinks=True)
        loader = _copy_libraries(work)
        shutil.copy2(loader, work / "libs" / "ld.so")
        for path in _walk(work):
            os.chmod(path, 0o755 if os.path.isdir(path) or os.access(path, os.X_OK) else 0o644)
        freeze([work])
        (work / "complete").touch()
        freeze([work / "complete"])
        try:
            work.rename(root)
        except OSError:  # another grader made it first
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _copy_libraries(work: Path) -> str:
    """Copies into work/libs every shared library the programs and extension modules of `work` load (ldd, to
    closure: a library found there is listed with its own); the dynamic loader's path."""
    elves = [str(work / "bin" / name) for name in os.listdir(work / "bin")]
    elves += [path for path in _walk(work / "lib") if path.endswith(".so") or ".so." in os.path.basename(path)]
    needed: set[str] = set()
    for start in range(0, len(elves), 100):
        done = subprocess.run(["ldd", *elves[start:start + 100]], capture_output=True, text=True, timeout=120,
                              env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
        needed |= {m.group(1) for line in done.stdout.splitlines() if (m := _LIBRARY.match(line))}
    loaders = sorted(path for path in needed if "/ld-linux" in path or "/ld-musl" in path or "/ld64" in path)
    if not loaders:
        raise OSError(f"ldd names no dynamic loader for {elves[0]}")
    for path in needed:
        if not path.startswith(str(work)):
            shutil.copy2(os.path.realpath(path), work / "libs" / os.path.basename(path))
    return os.path.realpath(loaders[0])


def _bound(folder: Path, keep: Path) -> None:
    """Removes the least recently used runtimes beyond KEEP (never `keep`), and builds a dead grader left (an hour
    old)."""
    runtimes = sorted((p for p in folder.iterdir() if p.name.startswith("python") and p != keep),
                      key=lambda p: p.stat().st_mtime, reverse=True)
    left = [p for p in folder.iterdir() if p.name.startswith(".build-") and p.stat().st_mtime < time.time() - 3600]
    for old in runtimes[KEEP - 1:] + left:
        shutil.rmtree(old, ignore_errors=True)
