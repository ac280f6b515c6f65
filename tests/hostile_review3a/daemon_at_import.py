"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: at import,
before the server answers anything, it starts with os.posix_spawn (no fork hook of the server's runs) a shell that
leaves a sleeper in a session of its own, another in a process group of its own (setpgid through Python), and
waits for the shell, so the server sees no child. Neither sleeper may outlive the grading."""

import os as _os

try:
    _pid = _os.posix_spawn("/bin/sh", ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 </dev/null & "
                                       "python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(300)' "
                                       ">/dev/null 2>&1 </dev/null &"], {"PATH": "/usr/bin:/bin"})
    _os.waitpid(_pid, 0)
except OSError:
    pass
