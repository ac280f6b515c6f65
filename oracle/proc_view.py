"""The launcher that gives a run without procfs, under bubblewrap, the /proc the Landlock fallback gives it
(oracle/run_view.py PROCFS; review 17's statm_if_readable): a real procfs in which nothing opens, EACCES, while
stat(2), access(2) and readlink(2) answer as on the host.

Landlock cannot be applied before bwrap (a Landlocked process may not mount), so bwrap starts this launcher
(oracle/proc_view.c) once its mounts are made, before the run's shell: it grants every access Landlock handles
beneath each entry of "/" but "proc" (bubblewrap's read-only mounts still refuse writes), restricts itself and execs
the shell. That procfs is not remounted read-only: the kernel asks a mount before Landlock, so an open for writing
would be EROFS there and EACCES under the fallback, whose /proc is the host's; Landlock refuses it in both. Its
numbers are oracle/landlock.py's, for this kernel's ABI (`landlock.numbers`), compiled in. It is built once with the
system's gcc, linked statically (a run of the frozen runtime has no /usr), and kept in the user's cache (mode 0700)
or, for a root grader, whose runs each have a uid of their own, in SHARED (mode 0711: passed through, not listed),
from where bwrap binds it read-only at PLACE (a copy handed over as data would need a chmod, which the system call
filter refuses bwrap). None without Landlock or a static C library: bubblewrap then shows a /proc of mode 0000
(oracle/isolation.py)."""

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from oracle import landlock
from oracle.hypothesis_home import cache_home, own_cache

PLACE = "/.proc_view"  # where bwrap binds the launcher for a run: a read-only file on the sealed root
SHARED = Path("/var/cache/pagedcheck/proc_view")  # a root grader's: its runs' uids pass through, on the system's disk
_SOURCE = Path(__file__).with_name("proc_view.c")
_built: dict[tuple[Path, bool], Path | None] = {}


def launcher(folder: Path | None = None, *, traversable: bool = False) -> Path | None:
    """The launcher program for this kernel, built into `folder` (default: the user's cache; made 0700 if missing,
    0711 if `traversable`, for runs of other uids) when missing; None when the kernel has no Landlock or it cannot be
    built here. OSError when another user owns the folder or others may write into it."""
    folder = cache_home() / "proc_view" if folder is None else folder
    if (folder, traversable) not in _built:
        _built[folder, traversable] = _build(folder, traversable)
    return _built[folder, traversable]


def _build(folder: Path, traversable: bool) -> Path | None:
    abi = landlock.abi_version()
    if abi < 1:
        return None
    defines = [f"-D{name}={value}" for name, value in landlock.numbers(abi).items()]
    key = hashlib.sha256(repr((_SOURCE.read_bytes(), defines)).encode()).hexdigest()[:16]
    own_cache(folder, traversable, "the /proc launcher")
    program = folder / f"proc_view-{key}"
    if program.is_file():
        return program
    handle, made = tempfile.mkstemp(prefix=".build-", dir=folder)
    os.close(handle)
    try:
        done = subprocess.run(["gcc", "-static", "-O2", "-s", *defines, "-o", made, str(_SOURCE)], capture_output=True,
                              timeout=120, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
        if done.returncode != 0:
            return None
        os.chmod(made, 0o755)
        os.replace(made, program)  # whole or not at all, for a grader beside this one
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(made):
            os.unlink(made)
    return program
