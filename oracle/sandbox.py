"""One sandbox for everything that runs submission code: gcc, drivers, probes, valgrind, Python servers.

    with Sandbox() as box:
        done = box.run(["gcc", "-c", "llm_memory.c"], cwd=area, writable=[area], timeout=60)

Isolation, strongest first (`Sandbox.isolation`, and one line for reports in `description`):

- "bubblewrap": Debian's bwrap. New mount, pid, network, IPC and UTS namespaces; only /usr (read-only), a
  minimal /dev, a read-only /proc (one in which nothing opens for a run of `procfs=False`), a small private /tmp
  and /dev/shm (sized tmpfs) and the paths a run names are visible, each at its own path; the in-memory root and
  /dev are read-only. The Python server sees the frozen copy of the runtime instead of /usr, as under "landlock"
  (`frozen`, oracle/run_view.py).
  When the grader is root, each run also gets an unprivileged uid of its own, used by nothing else.
- "landlock": no working bwrap (a container that cannot create namespaces), Linux Landlock available
  (oracle/landlock.py): each run may read only a frozen copy of the system's runtime (Python, the C library and
  loader a driver loads, valgrind, the shell tools, whose access times no run can change: oracle/runtime.py), or
  for the toolchain of a build (gcc, nm, objdump, objcopy) /usr less our own packages, the paths it names, /proc
  and a few devices, and write only its `writable` paths and a private temporary folder of its own ($TMPDIR,
  removed when the run ends; none for a run that may write nowhere, `private_tmp=False`, as under bubblewrap);
  both isolations show the same data folders and name them alike (oracle/run_view.py); no internet socket (the
  system call filter); signals and abstract unix
  sockets stay inside the run. Our package, the reference solutions, the rubric, other runs' areas, /etc and the
  host's /tmp and /dev/shm are unreachable by construction (an allow-list, whatever the files' modes). When the
  grader is root, each run also gets an unprivileged uid of its own. No pid or network namespace: other processes'
  command lines show in /proc.
- "uid": neither bwrap nor Landlock, grader is root: a fresh unprivileged uid per run, rlimits, a session of
  its own. The file system is visible as that uid sees it.
- "none": none of these: rlimits and a session only.

Limits (CPU, address space, file size, processes, open files) are set before exec, so they bind the
submission's first instruction, constructors included. Every process a run starts dies with it: its process
group is killed when it ends; bwrap's pid namespace and --die-with-parent take everything in it along, also
when the grader itself is killed; with a uid of its own, every process of the run's uid is killed when its
command ends (as bwrap's pid namespace ends with its first process) and again when the sandbox closes.
"""

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from oracle import landlock, seccomp
from oracle.isolation import RUN_PATH, bwrap_problem, proc_view, supervised, system_paths
from oracle.run_cpu import Budget
from oracle.run_limits import Finished, Limits, child_setup
from oracle.run_uid import fresh_uid, kill_uid, remove_ipc
from oracle.run_view import TMP, system_data
from oracle.runtime import SHARED, Runtime, freeze, frozen_runtime

_ENV = {"PATH": RUN_PATH, "LANG": "C.UTF-8", "HOME": "/tmp"}


def environment(**extra: str) -> dict[str, str]:
    """The environment every run gets (nothing of the grader's), with `extra` variables."""
    return {**_ENV, **extra}


class SandboxUnavailable(Exception):
    """The full sandbox (bubblewrap) is required but cannot run here; the message says why."""


class DeadlinePassed(BaseException):
    """The sandbox's budget (the whole grade's time limit: oracle/run_cpu.py) passed while a run was waited for;
    the run has been killed. A BaseException, so that no `except Exception` in a check (or in Hypothesis) takes
    it for the submission's failure; the grading loop reports the item as not run."""


def _traversable_tmp() -> str:
    """The temporary folder, if every run's uid can pass through it to our areas; else /tmp."""
    here = Path(tempfile.gettempdir()).resolve()
    if all(folder.stat().st_mode & 0o001 for folder in (here, *here.parents)):
        return str(here)
    return "/tmp"


class Sandbox:
    """Runs untrusted programs; one per grading run, used as a context manager (close() kills what is left)."""

    def __init__(self, *, require_full: bool = False, budget: Budget | None = None):
        self.budget = budget  # the grade's time limit: once it has passed, no run is waited for (DeadlinePassed)
        self.as_root = os.geteuid() == 0  # then every run gets a fresh unprivileged uid
        problem = bwrap_problem(self.as_root)
        self.landlock = 0 if problem is None else landlock.abi_version()  # the fallback's Landlock ABI
        self.isolation = ("bubblewrap" if problem is None else "landlock" if self.landlock
                          else "uid" if self.as_root else "none")
        if require_full and problem is not None:
            raise SandboxUnavailable(f"--require-sandbox: {problem}")
        self.problem = problem
        self.root = Path(tempfile.mkdtemp(prefix="pagedcheck-sandbox-", dir=_traversable_tmp() if self.as_root else None))
        if self.as_root:
            self.root.chmod(0o711)  # the runs' uids may pass through to their areas, not list them
        self._uids: list[int] = []
        self._lifeline = os.pipe()  # we never write; when this process dies, every run's supervisor sees EOF
        os.fchmod(self._lifeline[0], 0o444)  # a run of its own uid reopens it through /proc/self/fd where no bash reads it as a descriptor
        self._count = 0
        self._exposed: dict[tuple[str, int, int], Path] = {}
        self._procs: set[subprocess.Popen] = set()
        self._private_tmp: dict[subprocess.Popen, Path] = {}  # each run's $TMPDIR under Landlock
        self._run_uid: dict[subprocess.Popen, int] = {}  # each run's own uid, outside bubblewrap
        self._lock = threading.Lock()
        self._runtime: Runtime | None = None
        # the data every run reads (oracle/run_view.py): bubblewrap shows those not under /usr at their own path
        self._data = [d for d in system_data() if d.source is not None]
        self._elsewhere = [d for d in self._data if d.source is not None and not d.source.is_relative_to("/usr")]

    @property
    def description(self) -> str:
        who = "each run as an unprivileged uid of its own" if self.as_root else "as the grader's user"
        if self.isolation == "bubblewrap":
            return f"bubblewrap (no network, own pid namespace, only its own files visible), {who}, rlimits"
        why = f" ({self.problem})" if self.problem else ""
        if self.isolation == "landlock":
            return (f"landlock (Landlock ABI {self.landlock}: only its own files and a frozen copy of the system's "
                    f"runtime (the build's gcc: /usr) reachable, no internet socket, signals kept inside the run; no pid or network "
                    f"namespace), {who}, rlimits, own session{why}")
        return f"{self.isolation}: {who}, rlimits, own session; the file system is not hidden{why}"

    # ---- areas -----------------------------------------------------------------------------------------

    def area(self, name: str) -> Path:
        """A new empty directory a run may be given: read-only for sandboxed code, unless a run gets it among
        its `writable` paths (that run's uid then owns it)."""
        with self._lock:
            self._count += 1
            path = self.root / f"{self._count:03d}-{name}"
        path.mkdir()
        path.chmod(0o755)
        return path

    def _scratch(self) -> Path:
        """A run's private $TMPDIR under Landlock, which the run reads in its environment: named at random, not by
        the sandbox's count of areas, so its name says nothing of how many runs came before (a second opinion
        must look like the graded run's first process, oracle/hw3/alone.py)."""
        path = Path(tempfile.mkdtemp(suffix="-tmp", dir=self.root))
        path.chmod(0o755)
        return path

    def expose(self, path: Path | str) -> Path:
        """A read-only copy of one of our files (a built driver, say) that sandboxed code can run but not
        change; one copy per file version per sandbox."""
        path = Path(path)
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in self._exposed:
            copy = self.area("exposed") / path.name
            shutil.copy2(path, copy)
            copy.chmod(0o755 if os.access(path, os.X_OK) else 0o644)
            if self.isolation == "landlock":  # a driver: started through the frozen copy's loader, by its own file
                self.frozen_runtime().adopt(copy)
            self._exposed[key] = copy
        return self._exposed[key]

    def frozen_runtime(self) -> Runtime:
        """The frozen copy of the system's runtime that every run but a build's toolchain reads under Landlock
        (oracle/runtime.py), read in place: the user's cached one, or a root grader's shared one (its runs' uids
        pass through)."""
        with self._lock:
            if self._runtime is None:
                try:
                    self._runtime = frozen_runtime(SHARED, traversable=True) if self.as_root else frozen_runtime()
                except OSError as exc:  # a cache we may not use (another's, others may write it): one of our own
                    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise
                    self._runtime = frozen_runtime(self.root / "runtime-cache", traversable=True)
            return self._runtime

    def executable(self, program: Path) -> Path:
        """The file a run's process executes where the host's would run `program` (valgrind's memcheck tool): the
        frozen copy's under Landlock. The grader finds a driver's process by it (oracle/native/outside.py)."""
        return self.frozen_runtime().executable(program) if self.isolation == "landlock" else program

    # ---- running ---------------------------------------------------------------------------------------

    def popen(self, argv: Sequence[str | Path], *, readable: Sequence[Path] = (), writable: Sequence[Path] = (),
              cwd: Path | None = None, limits: Limits = Limits(), pass_fds: Sequence[int] = (),
              stdin: Any = subprocess.DEVNULL, stdout: Any = subprocess.DEVNULL, stderr: Any = subprocess.DEVNULL,
              env: dict[str, str] | None = None, private_tmp: bool = True, start_folder: bool = False,
              frozen: bool = False, procfs: bool = True) -> subprocess.Popen:
        """Starts argv in the sandbox, in a session of its own, with `limits` in force from its first
        instruction. Paths in `readable` / `writable` are visible (read-only / read-write) at their own path.
        `private_tmp=False`: no writable temporary folder under either isolation (no $TMPDIR under Landlock, where
        no mount can size one; an empty /tmp and /dev/shm sealed read-only under bubblewrap): it can write nowhere at
        all, the same in both (oracle/run_view.py), and is told so alike (oracle/seccomp.py `writes`: "nowhere").
        `start_folder` (with `private_tmp=False`; a memcheck run, whose valgrind writes its client's files at start):
        a folder of the grader's named by $TMPDIR, at the same path and of the same kind (on disk) under every
        isolation, /tmp and /dev/shm sealed as for `private_tmp=False`; `seal(proc)` closes it once the program has
        started (oracle/SANDBOX.md "What a run may write"). `frozen` (a run of PYTHON): its programs, libraries and
        data are the frozen runtime's alone under bubblewrap too, bound at its own path with no /usr of the host's, as
        under Landlock (oracle/run_view.py `one view`). `procfs=False` (a run of submission code that needs none: a
        native driver, the Python server): nothing under /proc opens under either isolation, so no process's memory
        file (/proc/PID/mem) either, while stat and access answer alike in both (bubblewrap: oracle/proc_view.py); with
        one (valgrind, the toolchain) it is read-only (oracle/run_view.py PROCFS)."""
        bubblewrap = self.isolation == "bubblewrap"
        uid = fresh_uid() if self.as_root else None
        env = dict(_ENV if env is None else env)
        ruleset, tmp, runtime = None, None, None
        if bubblewrap and frozen:  # the Landlock fallback's view: the copy only, its data named as there
            runtime = self.frozen_runtime()
            argv, added = runtime.start([str(part) for part in argv], self.root) or (argv, {})
            env.update(added)
            readable = [*readable, runtime.root]
        elif bubblewrap:  # the data the frozen copy holds under Landlock: the same folders (oracle/run_view.py)
            for data in self._data:  # named as under Landlock, where it is there already
                env.update(data.pointed(data.source))
            readable = [*readable, *(data.source for data in self._elsewhere if data.source is not None)]
        writes = "at_start" if start_folder else "anywhere" if private_tmp or writable else "nowhere"
        if start_folder:  # the same folder under every isolation: bound at its own path under bubblewrap
            tmp = self._scratch()
            env["TMPDIR"] = str(tmp)
            private_tmp = False
        if self.isolation == "landlock":  # a private $TMPDIR (gcc and valgrind need one), then the allow-list
            tmp = tmp or (self._scratch() if private_tmp else None)
            env.pop("TMPDIR", None)
            env.update({"TMPDIR": str(tmp)} if tmp else {})
            write = [*writable, *([tmp] if tmp else [])]
            runtime = self.frozen_runtime()  # the frozen copy every run but the toolchain's starts through
            runtime.before_run()
            started = runtime.start([str(part) for part in argv], self.root)
            system: list[Path] = [*system_paths(), runtime.root] if started is None else [runtime.root]
            if started is not None:
                argv, added = started
                env.update(added)
            freeze(readable)  # access times no run can change (oracle/runtime.py), put back before every process
            ruleset = landlock.Ruleset.build(read=[*system, *readable], write=write, proc=procfs)
        before_exec = child_setup(limits, uid, pass_fds, bubblewrap, writes, ruleset)

        # under bubblewrap the answers to a run that may not write are installed by bwrap, past its own mkdirs
        told = seccomp.writes_program(writes) if bubblewrap else None
        told_fd = os.memfd_create("pagedcheck-seccomp", os.MFD_CLOEXEC) if told else None
        if told_fd is not None:
            os.write(told_fd, told)
            os.lseek(told_fd, 0, os.SEEK_SET)
        cmd = supervised(argv, self.isolation, self.as_root, self._lifeline[0], readable=readable,
                         writable=[*writable, *([tmp] if start_folder and tmp else [])],
                         cwd=cwd, tmp_bytes=limits.tmp_bytes if private_tmp else 0,
                         tools=runtime.command if runtime else None, seccomp_fd=told_fd, fds=pass_fds,
                         procfs=procfs, view=proc_view(self.as_root) if bubblewrap and not procfs else None)
        if uid is not None:
            for path in [*writable, *([tmp] if tmp else [])]:
                os.chown(path, uid, uid)
            with self._lock:
                self._uids.append(uid)
        try:
            proc = subprocess.Popen(
                cmd, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                pass_fds=(*pass_fds, self._lifeline[0], *([told_fd] if told_fd is not None else [])),
                env=env, start_new_session=True, preexec_fn=before_exec,
                user=uid, group=uid, extra_groups=[] if uid is not None else None,
            )
        finally:
            if ruleset is not None:
                ruleset.close()
            if told_fd is not None:
                os.close(told_fd)
        with self._lock:
            self._procs.add(proc)
            if tmp is not None:
                self._private_tmp[proc] = tmp
            if uid is not None and not bubblewrap:
                self._run_uid[proc] = uid
        return proc

    def run(self, argv: Sequence[str | Path], *, timeout: float, output_limit: int = 1 << 20,
            **popen: Any) -> Finished:
        """Runs argv to its end or `timeout` s; what it printed (the first output_limit bytes); everything it
        started is killed before this returns."""
        with tempfile.TemporaryFile() as out:
            proc = self.popen(argv, stdout=out, stderr=subprocess.STDOUT, **popen)
            status, end = None, time.monotonic() + timeout  # (the run's own limit: wall clock)
            try:  # waits cut short by the grade's budget ask it again, until it has passed (DeadlinePassed)
                while status is None and (left := end - time.monotonic()) > 0:
                    try:
                        status = proc.wait(self.wait_limit(left))
                    except subprocess.TimeoutExpired:
                        pass
            finally:
                ended = self.stop(proc)
            status = None if status is None else ended
            return Finished(status, os.pread(out.fileno(), output_limit, 0).decode(errors="replace"))

    def wait_limit(self, timeout: float) -> float:
        """How long a run may be waited for: `timeout`, or less if the grade's budget may pass first (a wait it cut
        short asks again). Raises DeadlinePassed when it has passed already."""
        if self.budget is None:
            return timeout
        left = self.budget.left()
        if left <= 0:
            raise DeadlinePassed()
        return min(timeout, left)

    def stop(self, proc: subprocess.Popen, grace: float = 0.0) -> int:
        """Kills a process this sandbox started, with its process group, after letting it end by itself for
        up to `grace` s; its exit status."""
        if grace > 0:
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        status = self.status(proc.wait())
        with self._lock:
            self._procs.discard(proc)
            private_tmp = self._private_tmp.pop(proc, None)
            uid = self._run_uid.pop(proc, None)
        if uid is not None:  # what a run of its own uid left: processes that left its group, System V IPC
            kill_uid(uid)  # objects (bwrap's IPC namespace takes those along; here they would outlive it)
            remove_ipc(uid)
        if private_tmp is not None:  # what the run left there (its processes are gone: the group, or its uid)
            with contextlib.suppress(OSError):
                private_tmp.chmod(0o700)  # a sealed start folder's entries can be removed again
            shutil.rmtree(private_tmp, ignore_errors=True)
        return status

    def seal(self, proc: subprocess.Popen) -> None:
        """Closes the running `proc`'s start folder (popen's `start_folder`): read-only from now on, by the grader's
        chmod (a run's own chmod is refused: oracle/seccomp.py), the same folder under every isolation."""
        with self._lock:
            folder = self._private_tmp.get(proc)
        if folder is not None:
            folder.chmod(0o555)

    def spellings(self, proc: subprocess.Popen) -> dict[str, str]:
        """The grader's paths a message of the running `proc` may hold, each with the word that message spells it as
        (oracle/run_view.py `spelled`): the same words under both isolations."""
        words = {str(self.root): "<sandbox>"}
        if (tmp := self._private_tmp.get(proc)) is not None:
            words[str(tmp)] = TMP
        if self._runtime is not None:  # the fallback's runs and a frozen one under bubblewrap read it
            words[str(self._runtime.root)] = "/usr"
            words.update({str(self._runtime.root / "share" / data.name): data.usual for data in system_data()})
        if self.isolation == "bubblewrap":
            words.update({str(data.source): data.usual for data in self._elsewhere})
        return words

    def status(self, returncode: int) -> int:
        """A process's exit status as subprocess gives it (negative: a signal). The supervisor (and bwrap)
        report a command killed by signal N as exit status 128 + N; that is turned back into -N (so an
        exit(139) reads as SIGSEGV)."""
        if 128 < returncode < 128 + signal.NSIG:
            return -(returncode - 128)
        return returncode

    def close(self) -> None:
        """Kills every process still running that this sandbox started (under "uid": every process of its
        uid, wherever it went) and removes its areas."""
        for proc in list(self._procs):
            self.stop(proc)
        if self.as_root and self.isolation != "bubblewrap":
            for uid in self._uids:
                kill_uid(uid)
        for fd in self._lifeline:
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: Sandbox | None = None


def shared() -> Sandbox:
    """A sandbox for this process's runs outside grading (`fuzz --impl x.c`, tests), closed at exit."""
    global _shared
    if _shared is None:
        import atexit

        _shared = Sandbox()
        atexit.register(_shared.close)
    return _shared
