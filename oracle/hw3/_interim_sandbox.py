"""A stand-in with the shape of oracle.sandbox (rlimits and a session, no isolation) until it lands on main."""

import os
import resource
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 60
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    processes: int = 32
    open_files: int = 64
    tmp_bytes: int = 16 << 20


class Sandbox:
    isolation = "none"
    description = "no isolation: rlimits and a session only"

    def __init__(self, *, require_full: bool = False):
        self._areas: list[str] = []
        self._procs: list[subprocess.Popen] = []

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def area(self, name: str) -> Path:
        path = tempfile.mkdtemp(prefix=f"pagedcheck-{name}-")
        self._areas.append(path)
        return Path(path)

    def popen(self, argv, *, readable=(), writable=(), cwd=None, limits=Limits(), pass_fds=(),
              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=None):
        def limit() -> None:
            for which, value in ((resource.RLIMIT_CPU, limits.cpu_seconds), (resource.RLIMIT_FSIZE, limits.file_bytes),
                                 (resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_NOFILE, limits.open_files)):
                if value:
                    resource.setrlimit(which, (value, value))

        proc = subprocess.Popen([str(a) for a in argv], cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                                pass_fds=pass_fds, start_new_session=True, preexec_fn=limit,
                                env=env or {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        self._procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen) -> int | None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.wait()

    def close(self) -> None:
        for proc in self._procs:
            self.stop(proc)
        for path in self._areas:
            shutil.rmtree(path, ignore_errors=True)
