"""Runs one program a submission is linked into (a repro, valgrind over one), bounded in time,
in the sandbox (oracle/sandbox.py).

Each Path in the command (the program, say) is one of our files: the program sees a read-only copy of it and
nothing else of ours. Output goes to a private file, not a pipe, so a child that keeps the descriptor open
cannot make the wait outlive the timeout; everything the program started is killed when it ends.
"""

from pathlib import Path
from typing import Sequence

from oracle.sandbox import Finished, Limits, Sandbox, shared

__all__ = ["Finished", "run_program"]


def run_program(cmd: Sequence[str | Path], *, timeout: float, sandbox: Sandbox | None = None,
                limits: Limits = Limits(), pass_fds: Sequence[int] = (), cwd: Path | None = None) -> Finished:
    """Runs cmd in the sandbox for at most `timeout` s. `cwd` is accepted for the callers' convenience and
    ignored: the program runs in its sandbox's /tmp."""
    box = sandbox or shared()
    argv: list[str | Path] = []
    readable: list[Path] = []
    for part in cmd:
        if isinstance(part, Path):
            part = box.expose(part)
            readable.append(part.parent)
        argv.append(part)
    return box.run(argv, timeout=timeout, readable=readable, limits=limits, pass_fds=pass_fds, cwd=Path("/tmp"))
