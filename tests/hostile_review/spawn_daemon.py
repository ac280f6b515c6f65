"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: llm_init starts a
process with os.posix_spawn (no Python fork hooks run), which leaves a sleeper in a session of its own and
exits; llm_init waits for it, so the server sees no child and the call is graded as the honest one. The
sleeper must not outlive the grading."""

import os as _os

_honest_llm_init = llm_init
_spawned = []


def llm_init(pool_addr, pool_size):
    if not _spawned:
        _spawned.append(True)
        try:
            pid = _os.posix_spawn("/bin/sh", ["sh", "-c", "setsid sleep 120 >/dev/null 2>&1 </dev/null &"], dict(_os.environ))
            _os.waitpid(pid, 0)
        except OSError:
            pass
    return _honest_llm_init(pool_addr, pool_size)
