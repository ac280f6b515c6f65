"""Runs one program a submission is linked into (a repro, a probe, valgrind over either), bounded in time.

The program gets its own session, and its whole process group is killed when it ends or times out, so a
submission that forks or hangs leaves nothing behind. Output goes to a file, not a pipe, so a child that
keeps the descriptor open cannot make the wait outlive the timeout.
"""

import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

OUTPUT_LIMIT = 1 << 20  # bytes of output kept


@dataclass(frozen=True, slots=True)
class Finished:
    status: int | None  # exit status, negative for a signal (as in subprocess); None: timed out, killed
    output: str  # stdout and stderr, interleaved as written

    @property
    def signal_name(self) -> str | None:
        """SIGSEGV, SIGABRT, ... when the program died of a signal."""
        return signal.Signals(-self.status).name if self.status is not None and self.status < 0 else None


def run_program(cmd: Sequence[str | Path], *, cwd: Path, timeout: float) -> Finished:
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [str(part) for part in cmd],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            status: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            status = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        return Finished(status, os.pread(out.fileno(), OUTPUT_LIMIT, 0).decode(errors="replace"))
