"""What a run sees of the system besides its own paths, declared once for both isolations (issue 17, one-view): the
same data to read and the same temporary folder to write (or none), with bubblewrap and without it.

READ. Bubblewrap shows a run the host's /usr; the Landlock fallback only its frozen copy (oracle/runtime.py). Of the
data the C and Python libraries read from /usr at run time, `system_data` declares what a run reads, each a folder with
the variables that name it: the time zone database (zoneinfo.ZoneInfo, datetime with a zone; C's localtime under TZ:
PYTHONTZPATH, which zoneinfo reads even under `python -I`, and TZDIR), from the host's own (the first folder of the
interpreter's TZPATH that holds one) or, on a host without one, the `tzdata` package's (a dependency of pagedcheck),
so that it exists on any machine; and the compiled locales (/usr/lib/locale, LOCPATH: this machine's C library reads
C.UTF-8, every run's LANG, from there: 0.4 MiB). Bubblewrap shows each folder (under /usr it is there already, at the
place the libraries look, else bound read-only at its own path), the frozen copy holds a copy of each (share/NAME),
and under both the variables name the folder a run reads (so both read the same: LOCPATH, say, makes the C library
skip a locale-archive in both). No run has a network, so no certificate store; /etc is shown
by neither isolation.

PROGRAMS AND LIBRARIES. The Python server (oracle/child.py) runs from the frozen copy under both isolations
(`Sandbox.popen(frozen=True)`): bubblewrap binds the copy at its own path and shows no /usr, /bin or /lib of the
host's, so the interpreter, its standard library, the C libraries and the programs on its PATH (the copy's shell
tools) are one set in both, and whatever a library finds by looking is the same (review 14: find_library("c")
started the host's gcc under bubblewrap only; `test`, `lib2to3`, `ensurepip` and gcc, sort, date were bubblewrap's
only). Left: Landlock checks opening, not looking up, so under the fallback a host path still exists to os.stat
(/usr/bin/gcc: found, not runnable) where bubblewrap has none. The C runs (gcc, a driver, valgrind) are unchanged.

WRITE. A run that needs a temporary folder (gcc) gets a private one: bubblewrap's is a tmpfs of
`Limits.tmp_bytes`; the fallback's a folder on the grader's disk, each file bounded by the run's file-size limit (no
unprivileged mount can size it in total). The runs that run the submission's code as long as it is graded, the
Python server and a native C driver, get none under either isolation (`private_tmp=False`: oracle/child.py,
oracle/native/driver_process.py; review 14's log_in_tmp_c and spill_past_tmpfs): an empty /tmp and /dev/shm
sealed read-only under bubblewrap, no $TMPDIR and nothing writable under Landlock, so a submission that writes a
file fails the same way in both (a folder the grader bounded by counting a run's files was broken three ways by
review 13: a fairness limit on open files, a count hidden by an undumpable process, and the count's own cost).
A memcheck run's valgrind writes its folder at start only: the same folder in both, sealed before the submission's
code runs (`start_folder`), and every run of submission code is told it may write nowhere alike, by its system call
filter and not by the mounts, which differ (oracle/seccomp.py `writes`; oracle/SANDBOX.md "What a run may write"):
asked (access W_OK), made or removed a name, EROFS in both; a mount's flags (statfs, fstatfs: bubblewrap's read-only
mounts say ST_RDONLY, the fallback's host mounts do not) are not told at all, ENOSYS in both; a memcheck run's driver
installs the same answers once valgrind has started.

PROCFS. Through a process's memory file (/proc/PID/mem, /proc/PID/task/TID/mem) the kernel reads and writes that
process's pages with FOLL_FORCE: a guard page read with no fault, the driver's read-only code rewritten (review 16's
proc_self_mem_past, driver_handler_rewritten), and a process may always open its own. So a run that needs no procfs
(`Sandbox.popen(procfs=False)`: a native driver, the Python server) may open nothing under /proc, and every other
question about /proc is answered alike under both isolations (review 17's statm_if_readable: a C engine that trusts
access(2) crashed under one alone). Landlock governs opening, not looking up, so the fallback's /proc is the host's
with no rule for it: stat(2), access(2) and readlink(2) answer as on the host, every open beneath it is EACCES.
Bubblewrap shows the same: a procfs of the run's pid namespace, under the same Landlock decision, which bwrap's
launcher (oracle/proc_view.py: a Landlocked process may not mount, so it is applied inside bwrap, after the mounts)
takes: every handled access beneath each top folder but /proc, none under it. That procfs is not remounted
read-only (a read-only mount answers an open for writing EROFS before Landlock answers EACCES). An open through a
descriptor's link (/proc/self/fd/N, /dev/fd/N) is the file's own to answer, the same in both. A correct engine that
trusts access(2) and not its fopen gets the same grade in both (tests/test_tamper_review17.py: 0/6 in both): no
construction can answer "no" to access(2) under the fallback (no Landlock rule governs it, no system call filter
sees a path) nor let statm open without /proc/self/mem. Without Landlock in the kernel (or a static C library to
build the launcher) bubblewrap keeps a /proc of mode 0000 on the sealed root, where stat and access are EACCES too;
there is then no Landlock fallback to differ from. The lifeline is read as a descriptor, the watcher closes the
descriptors the grader names, and the driver is given vm.max_map_count as the grader read it. A run that needs a
procfs (valgrind reads /proc/self/maps; the toolchain) sees it read-only: bubblewrap remounts it so (EROFS to an open
for writing), Landlock grants reading alone (EACCES): no memory file opens for writing; for reading it does (left:
valgrind's run). The grader's own reads of a driver's memory are from outside, through the host's /proc
(oracle/native/outside.py).

WORDS. A message to the student names no path of the grader's, and reads the same under both isolations
(`spelled`, oracle/sandbox.py `spellings`): the fallback's temporary folder is /tmp and its frozen copy /usr, as
bubblewrap shows them, a data folder bound from elsewhere is where bubblewrap's /usr would show it, the submission's
own folder is
`.` (its working directory) and the rest of the sandbox's folder `<sandbox>`.
"""

import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

TMP = "/tmp"  # the run's temporary folder, as every message spells it


@dataclass(frozen=True)
class Data:
    """A folder of data the libraries read at run time: `source` on this host (None: none here), `name` its folder in
    the frozen copy (share/NAME), `variables` the environment variables that point a run at it, and `usual` where the
    libraries look without them (bubblewrap's /usr shows it there)."""

    name: str
    source: Path | None
    variables: tuple[str, ...]
    usual: str

    def pointed(self, folder: Path | None) -> dict[str, str]:
        """The environment that makes a run read this data from `folder` (none for None)."""
        return {variable: str(folder) for variable in self.variables} if folder is not None else {}


def system_data() -> list[Data]:
    """What every run reads of the system's data, with bubblewrap and without it (see the module's text)."""
    locales = Path("/usr/lib/locale")
    return [Data("zoneinfo", time_zones(), ("PYTHONTZPATH", "TZDIR"), "/usr/share/zoneinfo"),
            Data("locale", locales if locales.is_dir() else None, ("LOCPATH",), str(locales))]


def time_zones() -> Path | None:
    """The time zone database every run reads: the host's (a TZPATH folder holding UTC), else the tzdata package's;
    None when neither is here."""
    for folder in (sysconfig.get_config_var("TZPATH") or "").split(os.pathsep):
        if folder and os.path.isfile(os.path.join(folder, "UTC")):
            return Path(folder)
    try:
        import tzdata
    except ImportError:
        return None
    folder = Path(tzdata.__file__).parent / "zoneinfo"
    return folder if (folder / "UTC").is_file() else None


def spelled(text: str, spellings: dict[str, str]) -> str:
    """`text` (a message of a run's) with each path of the grader's in `spellings` written as the word it maps to (the
    longest path first, so a folder inside another keeps its own word)."""
    for path in sorted(spellings, key=len, reverse=True):
        text = text.replace(path, spellings[path])
    return text
