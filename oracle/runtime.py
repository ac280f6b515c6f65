"""The Landlock fallback's runtime: a private copy of the system Python, of the C runtime a driver loads, of
valgrind and of the shell tools, whose access times no run can change (issue 17; oracle/SANDBOX.md).

Without a mount namespace a run reads the host's own /usr, where reading a file writes its access time
(relatime: when the atime is a day old, or not newer than the file's mtime and ctime). A run could mark a file
chosen by its calls, and a later run (a second opinion, oracle/hw3/alone.py) read the mark. So a run under
Landlock reads no file of the host's: only this copy, its own areas and a few devices (`Runtime.start`). The copy
holds the interpreter, its standard library and the system's dist-packages, the shell tools (`_TOOLS`: the
supervisor's sh, bash and setpriv among them, oracle/isolation.py), valgrind's launcher and its memcheck tool, every
shared library those load (found by ldd), the dynamic loader, and the data the libraries read at run time that
bubblewrap shows too (oracle/run_view.py `system_data`: the time zones and the locales, in share/NAME, which each
run's environment names: `Runtime.data`). Every program of the copy is started through
the copied loader (`--library-path`), so no run opens the host's loader or libraries: the tools by the command
line `command` gives, or by their name on the copy's PATH (bin/: a static launcher, oracle/runtime_launch.c, that
starts elf/NAME so); a C driver by its own file, whose interpreter names the copy's loader (`adopt`,
oracle/elf_interp.py), so that its process still runs its own executable. Only the toolchain (gcc, nm, objdump,
objcopy: the build, before any of the submission's code runs) still reads the host's /usr (oracle/SANDBOX.md).

Every file and folder of the copy, and of a run's readable areas, gets one access time in the future
(`FROZEN_NS`, `freeze`): relatime never updates an atime newer than now (nor noatime); under strictatime every
read writes it, so the grader resets it before each process (`Runtime.before_run`). No run may set a time
itself (oracle/seccomp.py refuses utime, utimes, futimesat and utimensat).

The copy is built once per interpreter (at most KEEP copies, the least recently used removed first) and read in
place: in the user's cache, $XDG_CACHE_HOME/pagedcheck/runtime (mode 0700), where every run has the grader's uid;
for a root grader, whose runs each have a uid of their own, in SHARED (mode 0711: passed through, not listed).
Never in a sandbox's own folder: that is on the batch's temporary disk, which a submission may fill
(tests/test_tamper_review3a.py's disk_fill), and the copy is about 197 MiB.
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

from oracle.elf_interp import build_id, interpreter, point_at
from oracle.hypothesis_home import cache_home, own_cache
from oracle.run_view import system_data

PYTHON = "/usr/bin/python3"  # the system Python every Python submission runs under
FROZEN_NS = 4_000_000_000 * 10**9  # 2096-10-02: an access time in the future, which relatime never updates
KEEP = 2  # runtimes kept in the cache (one per interpreter version)
_FORMAT = "3"  # bumped when the copy's layout changes: older copies are then rebuilt
# the supervisor's (oracle/isolation.py) and a shell's tools, found on the run's PATH; valgrind: its launcher
_TOOLS = ("sh", "bash", "setpriv", "cat", "ls", "touch", "sleep", "setsid", "id", "stat", "env", "true", "false",
          "mkdir", "rm", "head", "wc", "valgrind")
_LAUNCHER = Path(__file__).with_name("runtime_launch.c")
_VALGRIND_FILES = ("memcheck-*-linux", "vgpreload_core-*-linux.so", "vgpreload_memcheck-*-linux.so", "*.supp")
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
    """A frozen copy of the system's runtime (see the module's text): `root` is all a run may read of it."""

    root: Path
    python: Path  # root/bin/pythonX.Y

    def data(self) -> dict[str, str]:
        """The environment that points a run at the copy's data folders (oracle/run_view.py), those it holds."""
        found: dict[str, str] = {}
        for data in system_data():
            folder = self.root / "share" / data.name
            found.update(data.pointed(folder if folder.is_dir() else None))
        return found

    @property
    def loader(self) -> Path:
        return self.root / "libs" / "ld.so"

    @property
    def _loader(self) -> list[str]:
        return [str(self.loader), "--inhibit-cache", "--library-path", str(self.root / "libs")]

    def command(self, program: str | Path) -> list[str]:
        """The argv prefix that runs `program` of the copy ("python", or one of its tools: sh, valgrind, ...)."""
        return [*self._loader, str(self.python if program == "python" else self.root / "elf" / str(program))]

    def tool(self, program: str) -> str | None:
        """The name of the copy's tool that `program` names (sh, /bin/sh, /usr/bin/sh); None when it holds none."""
        name = os.path.basename(program)
        if program not in (name, f"/bin/{name}", f"/usr/bin/{name}") or not (self.root / "elf" / name).is_file():
            return None
        return name

    def start(self, argv: list[str], own: Path) -> tuple[list[str], dict[str, str]] | None:
        """How a run of `argv` starts through the copy: its command line and the variables its environment gets;
        None when the copy holds no such program (the toolchain: gcc, nm, objdump, objcopy). A program under `own`
        (the sandbox's folder: an exposed driver) runs by its own file when `adopt` made it name the copy's
        loader, else through that loader."""
        program, libraries = argv[0], {"LD_LIBRARY_PATH": str(self.root / "libs")}
        extra = {"PATH": str(self.root / "bin"), **self.data()}
        if program == PYTHON:
            return [*self.command("python"), *argv[1:]], extra
        if Path(program).is_relative_to(own):
            named = interpreter(program)
            direct = named is None or named.path == str(self.loader)
            return [*([] if direct else self._loader), *argv], {**extra, **libraries}
        name = self.tool(program)
        if name is None:
            return None
        if name == "valgrind":  # its tool and preloads from the copy; the client (a driver) loads the copy's loader
            extra.update(libraries, VALGRIND_LIB=str(self.root / "valgrind"))
        return [*self.command(name), *argv[1:]], extra

    def adopt(self, program: Path) -> bool:
        """Makes an ELF program of ours (an exposed driver) name the copy's loader as its interpreter, where its
        header has room for that path (a driver linked with elf_interp.padded); whether it does now."""
        named = interpreter(program)
        return named is not None and (named.path == str(self.loader) or point_at(program, str(self.loader)))

    def executable(self, program: Path) -> Path:
        """The file a run's process executes where the host's would run `program` (valgrind's memcheck tool, by
        which the grader finds a driver under valgrind): the copy's, when it holds one of that name."""
        copy = self.root / "valgrind" / program.name
        return copy if copy.is_file() else program

    def before_run(self) -> None:
        """Puts back the frozen access times where the mount writes one at every read (strictatime)."""
        if atime_mode(self.root) == "strictatime":
            freeze([self.root])


SHARED = Path("/var/cache/pagedcheck/runtime")  # a root grader's: its runs' uids pass through, on the system's disk


def frozen_runtime(folder: Path | None = None, *, traversable: bool = False) -> Runtime:
    """The frozen copy of the system's runtime (Python, the C library and loader, valgrind, the shell tools) in
    `folder` (default: the user's cache; made 0700 if missing, 0711 if `traversable`: for runs of other uids, which
    may pass through but not list it), built when missing or stale. OSError when another user owns the folder or
    others may write into it."""
    folder = cache_home() / "runtime" if folder is None else folder
    own_cache(folder, traversable, "the Python runtime")
    python = Path(os.path.realpath(PYTHON))
    version = python.name.removeprefix("python")
    info = python.stat()
    tools = [shutil.which(tool, path="/usr/bin:/bin") for tool in _TOOLS]  # one installed later: a new copy
    data = {d.name: d.source for d in system_data() if d.source is not None}
    held = (_FORMAT, str(python), info.st_mtime_ns, info.st_size, tools, _LAUNCHER.read_bytes(),
            Path(__file__).read_bytes(), [(name, str(source), source.stat().st_mtime_ns) for name, source in
                                          data.items()])  # how it is built: this very text, the data it copies
    key = hashlib.sha256(repr(held).encode()).hexdigest()[:16]
    root = folder / f"python{version}-{key}"
    if not (root / "complete").exists():
        _build(folder, root, python, version, data)
    os.utime(root, ns=(FROZEN_NS, time.time_ns()))  # its mtime: when it was last used (the least recent goes first)
    _bound(folder, keep=root)
    return Runtime(root, root / "bin" / python.name)


def _build(folder: Path, root: Path, python: Path, version: str, data: dict[str, Path]) -> None:
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
    try:
        for part in ("bin", "elf", "libs"):
            (work / part).mkdir()
        shutil.copy2(python, work / "bin" / python.name)
        _copy_tools(work)
        _copy_valgrind(work)
        prefix = Path("/usr")
        stdlib = prefix / "lib" / f"python{version}"
        shutil.copytree(stdlib, work / "lib" / stdlib.name, symlinks=False,
                        ignore=lambda at, names: [n for n in names if n.endswith(".a")
                                                  or (Path(at) == stdlib and n in _SKIPPED)])
        for site in (prefix / "lib" / "python3" / "dist-packages",
                     prefix / "local" / "lib" / stdlib.name / "dist-packages"):
            if site.is_dir():
                shutil.copytree(site, work / site.relative_to(prefix), symlinks=False, ignore_dangling_symlinks=True)
        for name, source in data.items():  # the data every run reads (oracle/run_view.py: time zones, locales)
            _copy_resolved(source, work / "share" / name)
        loader = _copy_libraries(work)
        shutil.copy2(loader, work / "libs" / "ld.so")
        _copy_debug(work)
        _make_launchers(work, root)
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


def _copy_resolved(source: Path, target: Path) -> None:
    """Copies the files under `source` into `target`, each link as the file it names (relative to its folder, where
    copytree's check looks in the working directory and drops it); a link to nothing, to a folder, out of `source` or by
    an absolute path (zoneinfo's localtime: /etc/localtime, which bubblewrap does not show) is left out."""
    inside = os.path.realpath(source) + os.sep
    for folder, _dirs, files in os.walk(source):
        into = target / os.path.relpath(folder, source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if os.path.islink(path) and os.path.isabs(os.readlink(path)):
                continue
            if os.path.isfile(real) and real.startswith(inside):
                shutil.copyfile(real, into / name)


def _copy_tools(work: Path) -> None:
    """Copies each of _TOOLS the system has into work/elf (valgrind: its launcher program, valgrind.bin on Debian,
    whose script only sets variables)."""
    for tool in _TOOLS:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if tool == "valgrind" and found and interpreter(os.path.realpath(found)) is None:
            found = shutil.which("valgrind.bin", path="/usr/bin:/bin")
        if found and interpreter(os.path.realpath(found)) is not None:  # a dynamic ELF program (not a script)
            shutil.copy2(os.path.realpath(found), work / "elf" / tool)


def _copy_valgrind(work: Path) -> None:
    """Copies valgrind's memcheck tool, its preloaded libraries and suppressions into work/valgrind (VALGRIND_LIB),
    from the first of valgrind's library folders that holds memcheck."""
    launcher = shutil.which("valgrind", path="/usr/bin:/bin")
    if launcher is None:
        return
    prefix = Path(launcher).resolve().parent.parent
    for place in (prefix / "libexec" / "valgrind", prefix / "lib" / "valgrind",
                  Path(f"/usr/lib/{os.uname().machine}-linux-gnu/valgrind")):
        if any(place.glob("memcheck-*-linux")):
            (work / "valgrind").mkdir()
            for pattern in _VALGRIND_FILES:
                for path in place.glob(pattern):
                    shutil.copy2(path, work / "valgrind" / path.name)
            return


def _copy_debug(work: Path) -> None:
    """Copies the detached debug information the system holds for the copy's libraries (by build id, in
    /usr/lib/debug) into work/libs/.debug, where valgrind looks for a library's debug link (Debian names it by the
    build id): valgrind needs the loader's symbols (Debian: libc6-dbg), and reads them there, not in the host's /usr."""
    for name in os.listdir(work / "libs"):
        found = build_id(work / "libs" / name)
        debug = Path("/usr/lib/debug/.build-id") / (found or "??")[:2] / f"{(found or '')[2:]}.debug"
        if found and debug.is_file():
            (work / "libs" / ".debug").mkdir(exist_ok=True)
            shutil.copy2(debug, work / "libs" / ".debug" / debug.name)


def _make_launchers(work: Path, root: Path) -> None:
    """bin/NAME for every tool of work/elf: the static launcher (oracle/runtime_launch.c, built here with the
    system's gcc) that starts elf/NAME through the copy's loader, once the copy is at `root`. Without gcc or a
    static C library there are none: the tools then run only by the command line Runtime.command gives."""
    build = work / ".launcher"
    build.mkdir()
    (build / "runtime_root.h").write_text('#define ROOT "' + "".join(f"\\{byte:03o}" for byte in str(root).encode()) + '"\n')
    try:
        done = subprocess.run(["gcc", "-static", "-O2", "-I", str(build), "-o", str(build / "launch"), str(_LAUNCHER)],
                              capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        done = None
    if done is not None and done.returncode == 0:
        for name in os.listdir(work / "elf"):  # one file: each name a hard link to it
            os.link(build / "launch", work / "bin" / name)
    shutil.rmtree(build)


def _copy_libraries(work: Path) -> str:
    """Copies into work/libs every shared library the programs and extension modules of `work` load (ldd, to
    closure: a library found there is listed with its own); the dynamic loader's path."""
    elves = [str(work / "bin" / name) for name in os.listdir(work / "bin")]
    elves += [str(work / "elf" / name) for name in os.listdir(work / "elf")]
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
