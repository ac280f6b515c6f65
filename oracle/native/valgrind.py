"""Runs a built driver under valgrind, for the invalid reads, writes and uninitialised uses that heap
accounting and the family's comparisons cannot see.

The driver's own bookkeeping lives in mappings, never in heap blocks, so a block the submission never freed is
reported as lost. Usage: adapter = valgrind_adapter(FamilyAdapter, driver, log); run calls;
verdict = finish(adapter, log).
"""

import functools
import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from oracle.native.driver_process import DriverProcess
from oracle.native.log_channel import LogChannel
from oracle.sandbox import Sandbox

ERROR_EXIT = 99
# --vgdb=no: no gdbserver's FIFOs in the start folder (oracle/sandbox.py start_folder): valgrind writes there only its
# client's command line and auxiliary vector, each removed at once, before the driver's first instruction
VALGRIND = ("valgrind", "--leak-check=full", f"--error-exitcode={ERROR_EXIT}", "--track-origins=yes", "--vgdb=no")

Driven = TypeVar("Driven", bound=DriverProcess)


@functools.cache
def memcheck_program() -> Path | None:
    """The executable a driver's process runs under valgrind (the launcher execs its tool, in the same process):
    how the grader finds that process in its tree, to read its memory from outside. None: valgrind is absent."""
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    launcher = shutil.which("valgrind")
    prefix = Path(launcher).resolve().parent.parent if launcher else Path("/usr")
    places = [os.environ.get("VALGRIND_LIB", ""), prefix / "libexec" / "valgrind", prefix / "lib" / "valgrind",
              f"/usr/lib/{platform.machine()}-linux-gnu/valgrind"]
    found = [Path(place) / f"memcheck-{arch}-linux" for place in places if place]
    return next((tool for tool in found if tool.is_file()), None)


@dataclass(frozen=True, slots=True)
class ValgrindVerdict:
    clean: bool
    exit_status: int | None  # ERROR_EXIT when valgrind found errors; None if the driver had to be killed
    log: str


def valgrind_adapter(adapter: Callable[..., Driven], driver: Path | str, log_path: Path | str, timeout: float = 30.0,
                     sandbox: Sandbox | None = None) -> Driven:
    """The family's `adapter` (a DriverProcess) whose driver runs under valgrind, in the sandbox. No seccomp filter
    or address-space limit: valgrind needs neither in its way. Valgrind writes its log to a socket of ours
    (LogChannel), out of the program's reach, so the submission cannot write the verdict; finish() copies it to
    log_path."""
    channel = LogChannel()
    return adapter(driver, timeout=timeout, wrapper=(*VALGRIND, f"--log-fd={channel.child_fd}"), seccomp=False,
                   close_timeout=timeout, sandbox=sandbox, log_channel=channel, program=memcheck_program())


def finish(adapter: DriverProcess, log_path: Path | str) -> ValgrindVerdict:
    """Lets the driver exit (valgrind checks leaks at exit) and reads valgrind's verdict: clean when it exited
    with status 0 and its log holds its final error summary (a program that ends otherwise dodged the check)."""
    adapter.close()
    channel = adapter.log_channel
    assert channel is not None, "not an adapter of valgrind_adapter()"
    channel.close()
    log = channel.text.decode(errors="replace")
    Path(log_path).write_text(log)
    status = adapter.exit_status
    return ValgrindVerdict(clean=status == 0 and "ERROR SUMMARY: 0 errors" in log, exit_status=status, log=log)
