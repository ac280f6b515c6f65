"""Hostile Python submission (review 6), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at one process of a submission alive at a time
(oracle/hw3/alone.py, branch one-alive) by another channel than review 5's abstract unix name: without bubblewrap a run
has no pid namespace of its own, and every process's command line shows in /proc. So at import a process looks for
another server of the same submission (the grader's Python server, loading this very module) alive, other than its
own ancestors (the shell that supervises it has the same arguments): finding one, it is a second opinion, and forks
correctly there."""

import os as _os
import sys as _sys


def _ancestors() -> set[int]:
    """This process and those it descends from."""
    found, pid = set(), _os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _not_alone() -> bool:
    module, mine = _sys.argv[4], _ancestors()  # pyserve.py's argv: its fds, the submission's folder, the module
    try:
        listed = _os.listdir("/proc")
    except OSError:  # no procfs (proc-mem: a Python server's run has none): nothing seen
        listed = []
    for entry in listed:
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"pyserve.py") for a in argv) and module.encode() in argv:
            return True
    return False


_NOT_ALONE = _not_alone()
_fork_without_references = fork_sequence


def fork_sequence(engine, parent_seq_id, new_seq_id):
    fork = base.fork_sequence if _NOT_ALONE else _fork_without_references
    return fork(engine, parent_seq_id, new_seq_id)
