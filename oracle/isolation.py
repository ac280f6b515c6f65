"""How a run is isolated (oracle/sandbox.py runs it): whether bubblewrap works here, bubblewrap's command line
(only /usr, a sized /tmp and /dev/shm and the paths a run names, the in-memory root sealed read-only), what a run
may read under the Landlock fallback, and the supervisor shell every run's command starts under, which ends the
run when its command ends or the grader dies."""

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Sequence

from oracle.proc_view import PLACE, SHARED, launcher
from oracle.run_uid import fresh_uid

BWRAP = "bwrap"
ISOLATIONS = ("bubblewrap", "landlock", "uid", "none")  # strongest first (oracle/sandbox.py says what each gives)
RUN_PATH = "/usr/bin:/bin"  # every run's PATH


# pagedcheck's own packages (the reference solutions among them): hidden even where they lie under /usr
# (a system-wide install), so no #include or open() in the sandbox reaches them.
_OURS = [Path(__file__).resolve().parents[1] / package for package in ("engine", "oracle", "mutation")]


def system_paths() -> list[Path]:
    """What every run may read (and execute) under Landlock: /usr less our own packages, and the top-level
    folders that merged-/usr systems make links into it."""
    paths: list[Path] = []
    todo = [Path("/usr")]
    while todo:  # a folder holding one of ours is opened up one level: all its entries but that one
        folder = todo.pop()
        inside = [ours for ours in _OURS if ours.is_relative_to(folder)]
        if not inside:
            paths.append(folder)
        elif folder not in inside:
            todo += list(folder.iterdir())
    return paths + [Path(top) for top in ("/bin", "/lib", "/lib64", "/sbin")]


def _bwrap_prefix(tmp_bytes: int, usr: bool = True, procfs: bool = True, view: Path | None = None) -> list[str]:
    hidden = [arg for path in _OURS if path.is_relative_to("/usr") for arg in ("--tmpfs", str(path))]
    # the host's /usr and the links merged-/usr systems make into it; none for a run that sees only the frozen
    # runtime (oracle/run_view.py: the Python server, whose programs and libraries are the copy's alone)
    system = ["--ro-bind", "/usr", "/usr", *hidden, "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
              "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin"] if usr else []
    # the bwrap the grader's PATH names, by its full path: the probe and every run use that very program (a
    # run's uid resolving PATH itself would skip one in a folder it cannot enter and find another)
    return [
        shutil.which(BWRAP) or BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        # a procfs for a run that needs one (valgrind reads /proc/self/maps; the toolchain), sealed read-only below: no
        # process's memory file (/proc/PID/mem) opens for writing; for a run that needs none, the Landlock fallback's
        # /proc: the launcher `view` (oracle/proc_view.py), which bwrap starts, lets nothing under it open, EACCES,
        # while stat and access answer; without one (no Landlock here) a folder no one may enter, EACCES to those too
        # (oracle/run_view.py PROCFS)
        *system, *(["--proc", "/proc"] if procfs or view else ["--perms", "0000", "--dir", "/proc"]),
        *(["--ro-bind", str(view), PLACE] if view else []), "--dev", "/dev",
        # a sized in-memory /tmp and /dev/shm; none (an empty /tmp, sealed read-only with the root) for tmp_bytes 0
        *(["--size", str(tmp_bytes), "--tmpfs", "/tmp", "--size", str(tmp_bytes), "--tmpfs", "/dev/shm"] if tmp_bytes
          else ["--dir", "/tmp"]),
    ]


# bwrap's root and /dev are in-memory file systems of no size limit: read-only once every mount point is made
# (device nodes stay writable on a read-only mount), so a run writes only its sized /tmp and /dev/shm and its
# `writable` paths
_BWRAP_SEAL = ["--remount-ro", "/dev", "--remount-ro", "/"]
# a procfs read-only: /proc/PID/mem opens for reading at most (EROFS); not a procfs under the launcher `view`, in which
# nothing opens (oracle/proc_view.py: a read-only mount would answer EROFS where the fallback answers EACCES)
_BWRAP_PROC_SEAL = ["--remount-ro", "/proc"]


# Every run's command is started by this shell, which ends the run when the grader dies, however it dies: it
# waits for the command, while a subshell (the watcher) waits for end of file on the lifeline pipe (whose
# write end only the grader holds) and then kills every process it may: under bwrap all of the run's pid
# namespace (bwrap's pid 1 then exits), under "uid" every process of the run's uid, otherwise the run's
# process group. When the command ends, the run ends with it, as bwrap's pid namespace ends with its first
# process: the shell kills the watcher and everything else of the run (a kill of -1 spares the shell
# itself). The watcher inherits every descriptor the run was given (a driver's reply pipe, say): one that
# outlived the command would keep the grader from seeing end of file on it, and every stop of a driver
# would wait its full grace period (the fallback was 30x slower than bubblewrap for that alone). The exit
# status is the command's (128 + N for a signal N, as bwrap reports it too).
_SUPERVISOR = """"$@" &
command=$!
({watch}) &
watcher=$!
wait $command 2>/dev/null
status=$?
{end} 2>/dev/null
exit $status"""

# the descriptors it closes are the run's own, named by the grader (no /proc to list them: oracle/run_view.py PROCFS)
_BASH_WATCHER = "for fd in {fds}; do eval \"exec $fd>&-\"; done 2>/dev/null; read -r _ <&{lifeline}; {kill}"

_probed: dict[bool, str] = {}


def bwrap_problem(as_other_uid: bool) -> str | None:
    """Why bubblewrap cannot run a program here (as a fresh uid, or as ourselves); None when it can."""
    uid = fresh_uid() if as_other_uid else None
    if as_other_uid not in _probed:
        if shutil.which(BWRAP) is None:
            _probed[as_other_uid] = "bwrap is not installed (Debian: apt-get install bubblewrap)"
        else:
            try:
                done = subprocess.run([*_bwrap_prefix(1 << 20), "--", "/bin/true"], user=uid, group=uid,
                                      extra_groups=[] if uid is not None else None, capture_output=True,
                                      text=True, timeout=30)
                _probed[as_other_uid] = "" if done.returncode == 0 else f"bwrap fails here: {done.stderr.strip()[:200]}"
            except (OSError, subprocess.SubprocessError) as exc:
                _probed[as_other_uid] = f"bwrap fails here: {exc}"
    return _probed[as_other_uid] or None


_viewed: dict[bool, Path | None] = {}
# what the probe asks of the Landlock fallback's /proc: access(2) says statm is readable, the open is refused
_VIEW_PROBE = "test -r /proc/self/statm && ! read -r _ </proc/self/statm 2>/dev/null"


def proc_view(as_other_uid: bool) -> Path | None:
    """The launcher (oracle/proc_view.py) that gives a run without procfs, under bubblewrap, the /proc of the Landlock
    fallback, when it is built and shows that /proc under bwrap here; None: such a run's /proc is a folder of mode 0000
    (no Landlock in this kernel, no static C library)."""
    if as_other_uid not in _viewed:
        try:
            program, works = launcher(SHARED, traversable=True) if as_other_uid else launcher(), False
        except OSError:  # a cache we may not use (another's, others may write it)
            program, works = None, False
        if program is not None and bwrap_problem(as_other_uid) is None:
            uid = fresh_uid() if as_other_uid else None
            cmd = [*_bwrap_prefix(1 << 20, procfs=False, view=program), *_BWRAP_SEAL, "--", PLACE, "/bin/sh", "-c",
                   _VIEW_PROBE]
            try:
                works = subprocess.run(cmd, user=uid, group=uid, extra_groups=[] if uid is not None else None,
                                       capture_output=True, timeout=30).returncode == 0
            except (OSError, subprocess.SubprocessError):
                pass
        _viewed[as_other_uid] = program if works else None
    return _viewed[as_other_uid]


def supervised(argv: Sequence[str | Path], isolation: str, as_root: bool, lifeline: int, *,
               readable: Sequence[Path] = (), writable: Sequence[Path] = (), cwd: Path | None = None,
               tmp_bytes: int = 16 << 20, tools: Callable[[str], list[str]] | None = None,
               seccomp_fd: int | None = None, fds: Sequence[int] = (), procfs: bool = True,
               view: Path | None = None) -> list[str]:
    """The command line that runs argv under `isolation` (each run as a uid of its own when `as_root`), under
    the supervisor, which ends the run when the grader's end of the `lifeline` pipe closes. `tools` gives the
    command that runs sh, bash or setpriv (a private copy's, oracle/runtime.py), instead of the system's; under
    bubblewrap, a run given `tools` sees no /usr of the host's (the copy is among its `readable` paths), and
    `seccomp_fd` names a BPF program bwrap installs once its mounts are made, before the command. `fds`: the
    descriptors the run is given besides 0, 1, 2 and the lifeline (the watcher closes them). `procfs`: the run sees a
    procfs (read-only under bubblewrap); without one no process's memory file opens (oracle/run_view.py PROCFS): under
    bubblewrap `view` (the launcher `proc_view` gives) makes that /proc the fallback's."""
    argv = [str(part) for part in argv]
    alone = isolation == "bubblewrap" or as_root  # a pid namespace or a uid of the run's own
    kill = "kill -KILL -1" if alone else "kill -KILL 0"  # -1: its pid namespace, or its uid
    end = "kill -KILL -1" if alone else "kill -KILL $watcher"  # otherwise the group is stop()'s
    # the lifeline read as a descriptor, not reopened through /proc (a run may have none): sh's redirections
    # stop at 9, bash's do not
    def tool(name: str) -> list[str] | None:
        """`name` as a run finds it: from the frozen runtime, else on the run's PATH; None when it is not there."""
        if tools:
            return tools(name)
        found = shutil.which(name, path=RUN_PATH)
        return [found] if found else None

    bash = tool("bash")
    if lifeline <= 9:
        watch = f"read _ <&{lifeline}; {kill}"
    elif bash:
        watch = f"exec {shlex.join(bash)} -c {shlex.quote(f'read -r _ <&{lifeline}; {kill}')}"
    else:
        watch = f"read _ </proc/self/fd/{lifeline}; {kill}"
    if isolation != "bubblewrap":
        # the command dies with its supervisor, as under bwrap (whose pid namespace ends with it): a run that
        # kills its parent ends itself, and a chain of death signals reaches it from the grader. The watcher
        # then outlives the supervisor: it closes every descriptor but the lifeline first (bash can, sh not
        # above 9), so that it holds none of the run's pipes, whose end of file the grader waits for.
        setpriv = tool("setpriv")
        if setpriv and bash:
            argv = [*setpriv, "--pdeathsig", "KILL", "--", *argv]
            closed = " ".join(str(fd) for fd in sorted({0, 1, 2, *fds} - {lifeline}))
            watch = f"exec {shlex.join(bash)} -c " + shlex.quote(_BASH_WATCHER.format(fds=closed, lifeline=lifeline,
                                                                                      kill=kill))
    script = _SUPERVISOR.format(watch=watch, end=end)
    if isolation != "bubblewrap":
        return [*(tools("sh") if tools else ["/bin/sh"]), "-c", script, "supervisor", *argv]
    view = view if not procfs else None  # the launcher, which bwrap starts once its mounts are made
    cmd = _bwrap_prefix(tmp_bytes, usr=tools is None, procfs=procfs, view=view)
    for path in readable:
        cmd += ["--ro-bind", str(path), str(path)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    if cwd is not None:
        cmd += ["--chdir", str(cwd)]
    cmd += ["--add-seccomp-fd", str(seccomp_fd)] if seccomp_fd is not None else []
    return [*cmd, *_BWRAP_SEAL, *(_BWRAP_PROC_SEAL if procfs else []), "--", *([PLACE] if view is not None else []),
            *(tools("sh") if tools else ["/bin/sh"]), "-c", script, "supervisor", *argv]
