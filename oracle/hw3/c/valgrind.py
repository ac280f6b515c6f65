"""Runs a built driver under valgrind, for the invalid reads, writes and uninitialised uses that heap
accounting and the pool comparison cannot see.

The driver frees its own bookkeeping on a clean exit, so a block the submission never freed is reported
as definitely lost. Usage: adapter = valgrind_adapter(driver, log); run calls; verdict = finish(adapter).
"""

from dataclasses import dataclass
from pathlib import Path

from oracle.hw3.c.adapter import CAdapter
from oracle.sandbox import Sandbox

VALGRIND = ("valgrind", "--leak-check=full", "--error-exitcode=99", "--track-origins=yes")
ERROR_EXIT = 99


@dataclass(frozen=True, slots=True)
class ValgrindVerdict:
    clean: bool
    exit_status: int | None  # ERROR_EXIT when valgrind found errors; None if the driver had to be killed
    log: str


def valgrind_adapter(driver: Path | str, log_path: Path | str, timeout: float = 30.0, sandbox: Sandbox | None = None) -> CAdapter:
    """A CAdapter whose driver runs under valgrind, in the sandbox. No seccomp filter or address-space limit:
    valgrind needs neither in its way. Valgrind writes its log to a descriptor we opened on log_path, which
    it keeps out of the program's reach, so the submission cannot write the verdict."""
    log = open(log_path, "wb")
    adapter = CAdapter(
        driver,
        timeout=timeout,
        wrapper=(*VALGRIND, f"--log-fd={log.fileno()}"),
        seccomp=False,
        close_timeout=timeout,
        sandbox=sandbox,
        pass_fds=(log.fileno(),),
    )
    adapter.valgrind_log = log  # type: ignore[attr-defined]  # open as long as the adapter may restart
    return adapter


def finish(adapter: CAdapter, log_path: Path | str) -> ValgrindVerdict:
    """Lets the driver exit (valgrind checks leaks at exit) and reads valgrind's verdict."""
    adapter.close()
    getattr(adapter, "valgrind_log").close()
    status = adapter.exit_status
    log = Path(log_path).read_text(errors="replace") if Path(log_path).exists() else ""
    return ValgrindVerdict(clean=status == 0, exit_status=status, log=log)
