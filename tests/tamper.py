"""Machinery of the tamper suite (tests/test_tamper*.py): the world a hostile submission is graded in, and
the evidence of what it did to it.

A `Scene` is one attack's world under pytest's tmp_path: a grader HOME and a rubric folder, each holding a
secret file; a secret in the grader's environment; a file the attack is told to write to; a TCP port the
test listens on; the grader's TMPDIR and output folder (its scratch). The grader runs as a separate
`pagedcheck` process, in its own session and working directory, with a standard input that stays open and empty (so an
`#include "/dev/stdin"` that reads the grader's input waits forever, as on a course machine's terminal).

The evidence: `snapshot` hashes files (the grader's installed files, everything outside the scratch);
`Reaper` makes the test process a child subreaper, so every process a grading starts stays a descendant
of the test however it detaches (setsid, double fork), and lists those still alive; `leaks` names each
secret, and each line of /etc/shadow and /etc/passwd, that a text holds.
"""

import compileall
import ctypes
import hashlib
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import seeded_build_cache

ROOT = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36
SYSTEM_FILES = (Path("/etc/shadow"), Path("/etc/passwd"))
SECRET_ENV = "PAGEDCHECK_TAMPER_SECRET"


def grader_files() -> list[Path]:
    """What the grader runs from: the repository's oracle/ and engine/, and pagedcheck's entries in the
    venv's site-packages (the editable install's .pth, its finder and dist-info)."""
    site = Path(sysconfig.get_paths()["purelib"])
    return [ROOT / "oracle", ROOT / "engine", *sorted(p for p in site.iterdir() if "pagedcheck" in p.name.lower())]


def compile_grader() -> None:
    """Writes the bytecode of every grader module, as the grader's first imports would."""
    for folder in (ROOT / "oracle", ROOT / "engine"):
        compileall.compile_dir(folder, quiet=1)


def snapshot(roots: list[Path], skip: tuple[Path, ...] = ()) -> dict[Path, bytes]:
    """Every file under `roots` (files or folders; symbolic links as their target text) and its bytes,
    except under `skip`."""
    files: dict[Path, bytes] = {}
    for root in roots:
        paths = [root] if not root.is_dir() or root.is_symlink() else sorted(root.rglob("*"))
        for path in paths:
            if any(path == s or s in path.parents for s in skip):
                continue
            if path.is_symlink():
                files[path] = b"symlink -> " + os.readlink(path).encode()
            elif path.is_file():
                files[path] = path.read_bytes()
    return files


def differences(before: dict[Path, bytes], after: dict[Path, bytes]) -> list[str]:
    """One line per file created, deleted or changed."""
    lines = [f"created {p}" for p in after.keys() - before.keys()]
    lines += [f"deleted {p}" for p in before.keys() - after.keys()]
    lines += [f"changed {p} (sha256 {_sha(before[p])} -> {_sha(after[p])})"
              for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(lines)


def restore(before: dict[Path, bytes], after: dict[Path, bytes]) -> None:
    """Puts files back as `before` had them (an attack that got through must not spoil later tests)."""
    for path in after.keys() - before.keys():
        path.unlink(missing_ok=True)
    for path, data in before.items():
        if after.get(path) != data and not data.startswith(b"symlink -> "):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


@dataclass
class Scene:
    """One attack's world, under `root`; see the module docstring."""

    root: Path
    token: str = field(default_factory=lambda: secrets.token_hex(12))
    without_bwrap: bool = False  # a `bwrap` that always fails stands first on PATH: the fallback isolation

    def __post_init__(self) -> None:
        # TMPDIR outside pytest's folders: a sandbox uid must be able to pass through to its areas there, and
        # pytest's base folder is private to its user (mode 0700)
        self.tmp = Path(tempfile.mkdtemp(prefix="pagedcheck-tamper-"))
        self.tmp.chmod(0o711)
        for folder in (self.home, self.rubric_dir, self.target.parent, self.cache, self.out, self.mods, self.work):
            folder.mkdir(parents=True, exist_ok=True)
        (self.home / "secret.txt").write_text(f"home-secret-{self.token}\n")
        (self.rubric_dir / "secret.txt").write_text(f"rubric-secret-{self.token}\n")
        self.target.write_text("the test's own file\n")
        # the grader's build cache as its first C build leaves it (tests/conftest.py seeded_build_cache): HW3's driver
        # object, our own source compiled before any of the submission's code runs; the submission is built in the scene
        seeded_build_cache(self.cache / "pagedcheck" / "build")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        if self.without_bwrap:  # as in a container that cannot create namespaces: bwrap is there and fails
            self.failing_bin.mkdir(parents=True, exist_ok=True)
            fake = self.failing_bin / "bwrap"
            fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
            fake.chmod(0o755)

    home = property(lambda self: self.root / "home")
    rubric_dir = property(lambda self: self.root / "rubric")
    target = property(lambda self: self.root / "target" / "notes.txt")
    cache = property(lambda self: self.root / "cache")  # the grader's XDG_CACHE_HOME (its build cache): scratch
    out = property(lambda self: self.root / "out")  # reports: scratch
    mods = property(lambda self: self.root / "mods")  # Python submissions
    work = property(lambda self: self.root / "work")  # the grader's working directory (Hypothesis keeps
    # its example database there): scratch
    port = property(lambda self: self.listener.getsockname()[1])
    # holds the failing bwrap (without_bwrap): under `tmp`, which a fresh uid may pass through, since a root grader
    # asks bwrap as a fresh uid whether it runs (under pytest's private folder it would find the real one next)
    failing_bin = property(lambda self: self.tmp / "failing-bin")

    @property
    def markers(self) -> tuple[str, ...]:
        """Paths of the scene that a process of its grading has in its command line."""
        return f"{self.root}{os.sep}", f"{self.tmp}{os.sep}"

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.pathsep.join([str(self.failing_bin)] * self.without_bwrap + [os.environ.get("PATH", "/usr/bin:/bin")]),
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "XDG_CACHE_HOME": str(self.cache),
            "PYTHONPATH": os.pathsep.join([str(self.mods), str(ROOT)]),
            "PYTHONDONTWRITEBYTECODE": "1",  # no .pyc beside a Python submission: its folder stays as it was
            SECRET_ENV: f"env-secret-{self.token}",
        }

    def fill(self, text: str, **more: str) -> str:
        """`text` with each @NAME@ replaced: the paths an attack aims at."""
        site = Path(sysconfig.get_paths()["purelib"])
        names = {
            "HOME": str(self.home), "RUBRIC_DIR": str(self.rubric_dir), "TARGET": str(self.target),
            "TMPDIR": str(self.tmp), "CACHE": str(self.cache), "PORT": str(self.port), "ORACLE": str(ROOT / "oracle"),
            "PTH": str(next(site.glob("__editable__*pagedcheck*.pth"), site / "pagedcheck.pth")),
            "REFERENCE": str(ROOT / "engine" / "c" / "llm_memory.c"),
            "REPORT": str(self.out / "report.json"), "RESULTS": str(self.out / "results.json"), **more,
        }
        for name, value in names.items():
            text = text.replace(f"@{name}@", value)
        return text

    def outside_scratch(self) -> list[Path]:
        """What an attack must leave as it was: the grader's files and everything of the scene but scratch."""
        return [*grader_files(), *(p for p in self.root.iterdir() if p not in (self.cache, self.out, self.work))]

    def connections(self) -> int:
        """Connections made to the listening port (each accepted and closed)."""
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def leaks(self, text: str) -> list[str]:
        """The secrets `text` holds: the planted token, and lines of /etc/shadow or /etc/passwd (counted)."""
        found = [f"the secret token {self.token}"] if self.token in text else []
        for path in SYSTEM_FILES:
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            if shown := [line for line in lines if len(line.strip()) >= 8 and line in text]:
                found.append(f"{len(shown)} line(s) of {path}, first {shown[0]!r}")
        return found


def report_texts(folder: Path) -> dict[str, str]:
    """Every file under `folder` (report.json, results.json, repro files, grader.log, ...) as text."""
    return {str(p.relative_to(folder)): p.read_text(errors="replace")
            for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    cmdline: str


def processes() -> dict[int, Proc]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry)] = Proc(int(entry), int(fields[1]), fields[0], cmdline.strip())
    return found


class Reaper:
    """Makes this process a child subreaper while it is open, so what a grading leaves stays our descendant."""

    def __enter__(self) -> "Reaper":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        self.libc = libc
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill(self.leftovers())
        self.libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

    def leftovers(self, *markers: str) -> list[Proc]:
        """Live processes descended from this one, and any whose command line holds one of `markers` (paths
        of the scene), other than this process; zombies are dead and are reaped here."""
        table = processes()
        me = os.getpid()
        children: dict[int, list[int]] = {}
        for proc in table.values():
            children.setdefault(proc.ppid, []).append(proc.pid)
        mine, todo = set(), list(children.get(me, []))
        while todo:
            pid = todo.pop()
            mine.add(pid)
            todo += children.get(pid, [])
        found = []
        for pid in sorted(mine | {p.pid for p in table.values() if any(m in p.cmdline for m in markers)}):
            proc = table[pid]
            if pid == me:
                continue
            if proc.state in "ZX":
                if proc.ppid == me:
                    _reap(pid)
                continue
            found.append(proc)
        return found

    def kill(self, procs: list[Proc]) -> None:
        for proc in procs:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(proc.pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.state not in "ZX" for p in self._alive(procs)):
            time.sleep(0.05)
        for proc in procs:
            _reap(proc.pid)

    @staticmethod
    def _alive(procs: list[Proc]) -> list[Proc]:
        table = processes()
        return [table[p.pid] for p in procs if p.pid in table]


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


@dataclass(frozen=True)
class Ran:
    status: int | None  # None: still running after the harness's limit, then killed
    stdout: str
    stderr: str


def run_pagedcheck(args: list[str], scene: Scene, *, limit: float = 180.0, memory_guard: int | None = None) -> Ran:
    """`pagedcheck ARGS` as a course would run it, in its own session, in the scene's world. `limit` is the
    harness's guard against a grader that never ends (it is not a timing assertion: a grading that needs it
    has failed to bound itself). Output goes to files, so a process the grading leaves holding them cannot
    keep this waiting. `memory_guard` caps the grader's address space (and its children's): a guard for
    this shared machine against an unbounded compiler, not part of what is tested."""
    stdin_r, stdin_w = os.pipe()  # kept open and empty until the grading ends
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen([sys.executable, "-m", "oracle.cli", *args], cwd=scene.work, env=scene.env(),
                                    stdin=stdin_r, stdout=out, stderr=err, start_new_session=True,
                                    preexec_fn=None if memory_guard is None else lambda: resource.setrlimit(
                                        resource.RLIMIT_AS, (memory_guard, memory_guard)))
        finally:
            os.close(stdin_r)
        try:
            status: int | None = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            proc.wait()
            status = None
        finally:
            os.close(stdin_w)
        return Ran(status, *(os.pread(f.fileno(), 1 << 22, 0).decode(errors="replace") for f in (out, err)))
