"""Hostile Python submission (one-alive, issue 17), on top of tests/broken/fork_no_incref.patch (fork_sequence shares
the parent's blocks without taking a reference of them): a process that finds the calls it has been made so far
were made before, in this grading, knows it is a second opinion (a witness replays the graded run's calls) and
forks correctly there.

No two processes of a submission are alive at once (oracle/hw3/alone.py), so the mark must outlive its process:
a file's access time. Without bubblewrap /usr is the host's own mount, where reading a file updates its atime
(relatime: when the atime is a day old); under bubblewrap /usr is a read-only mount, which never does. At each
fork the calls so far and the grader's pid (its `pagedcheck` ancestor, read from /proc) name one file of
/usr/share/doc: an atime newer than the grader's start (and not in the future) means this prefix ran before in this grading (a second
opinion); else the file is read, which marks it, and the fork is the broken one. The files: the standard
library's sources (readable under every isolation) and /usr/share/doc's copyright files (where /usr is).
Under the Landlock fallback a Python run reads only a private copy of the system Python whose access times lie in
the future (oracle/runtime.py), which relatime never updates: no mark is made."""

import glob as _glob
import hashlib as _hashlib
import os as _os
import time as _time

# files every run may read, whatever the isolation: the standard library's sources (a run imports their bytecode,
# so the sources themselves stay unread), and the host's documentation where a run may read /usr
_FILES = sorted(_glob.glob(_os.path.join(_os.path.dirname(_os.__file__), "*.py")) + _glob.glob("/usr/share/doc/*/copyright"))
_made = []  # the calls made in this process: (api, args), as a witness that replays the program makes them again


def _grader():
    """(pid, start in seconds since the epoch) of the grader: the farthest ancestor that runs `pagedcheck` or
    `python -m oracle.cli` (a nearer one may only name a path of the grader's); None when none shows."""
    found = None
    try:
        boot = next(float(line.split()[1]) for line in open("/proc/stat") if line.startswith("btime"))
        pid = _os.getppid()
        while pid > 1:
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if b"oracle.cli" in argv or any(arg.endswith(b"/pagedcheck") for arg in argv[:2]):
                found = pid, boot + int(stat[19]) / _os.sysconf("SC_CLK_TCK")
            pid = int(stat[1])
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return found


def _ran_before():
    """Whether this process's calls so far were made before in this grading (and mark them, when not)."""
    grader = _grader()
    if grader is None or not _FILES:
        return False
    key = _hashlib.sha256(repr((grader[0], _made)).encode()).digest()
    mark = _FILES[int.from_bytes(key[:8], "big") % len(_FILES)]
    try:
        if grader[1] < _os.stat(mark).st_atime <= _time.time():  # a future atime is no mark: nobody's read wrote it
            return True
        with open(mark, "rb") as file:
            file.read(1)
    except OSError:
        pass
    return False


def _noted(api, call):
    def noted(engine, *args):
        _made.append((api, args))
        return call(engine, *args)
    return noted


_fork_without_references = fork_sequence
_llm_init, _create, _append, _free = llm_init, create_sequence, append_kv, free_sequence


def llm_init(pool, pool_size):
    _made.append(("llm_init", (pool is None, pool_size)))
    return _llm_init(pool, pool_size)


create_sequence = _noted("create_sequence", _create)
append_kv = _noted("append_kv", _append)
free_sequence = _noted("free_sequence", _free)


def fork_sequence(engine, parent_seq_id, new_seq_id):
    _made.append(("fork_sequence", (parent_seq_id, new_seq_id)))
    fork = base.fork_sequence if _ran_before() else _fork_without_references
    return fork(engine, parent_seq_id, new_seq_id)
