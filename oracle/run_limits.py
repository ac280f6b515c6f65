"""What a run of the sandbox is held to from its first instruction: its rlimits, set in the child between fork and exec
(with the system-call filter and the Landlock ruleset, last), and how a run they stopped ended, in words."""

import ctypes
import resource
import signal
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from oracle import seccomp

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


# how a run the limits or the seccomp filter stopped ended, in words
SIGNAL_LABELS = {
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGXFSZ: "wrote more output than allowed (SIGXFSZ)",
    signal.SIGXCPU: "exceeded its CPU time limit (SIGXCPU)",
    signal.SIGSYS: "made a forbidden system call (SIGSYS): fork, exec, clone, kill and ptrace are not allowed",
}


def signal_label(number: int) -> str:
    """How a run killed by signal `number` ended, in words."""
    sig = signal.Signals(number)
    return SIGNAL_LABELS.get(sig, f"crashed with {sig.name}")


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 60
    memory_bytes: int = 1 << 30  # RLIMIT_AS; 0: no limit (valgrind, the 2 GiB probe)
    file_bytes: int = 16 << 20  # RLIMIT_FSIZE: the largest file it may write, its captured output included
    processes: int = 32  # RLIMIT_NPROC, counted for the run's own uid
    open_files: int = 1024  # valgrind keeps the top few for itself: descriptors we pass must lie below
    tmp_bytes: int = 16 << 20  # the private /tmp and /dev/shm, each (bubblewrap; in memory, sized)


@dataclass(frozen=True, slots=True)
class Finished:
    status: int | None  # exit status, negative for a signal (as in subprocess); None: timed out, killed
    output: str  # stdout and stderr, interleaved as written, cut at the run's output limit

    @property
    def signal_name(self) -> str | None:
        """SIGSEGV, SIGABRT, ... when the program died of a signal."""
        return signal.Signals(-self.status).name if self.status is not None and self.status < 0 else None


def _limit(resource_id: int, value: int) -> None:
    resource.setrlimit(resource_id, (value, value))


def child_setup(limits: Limits, uid: int | None, pass_fds: Sequence[int], bubblewrap: bool, writes: str,
                ruleset: Any) -> Callable[[], None]:
    """The function the child runs after the uid change, before exec: `limits`, the filter (`writes`: what the run is
    told about writing, installed here outside bubblewrap; bwrap installs it under bubblewrap), then `ruleset`."""

    def before_exec() -> None:  # pragma: no cover  (in the child, after the uid change, before exec: coverage
        # does not follow a child between fork and exec; tests/test_sandbox.py checks each limit's effect)
        if not bubblewrap:  # bwrap's --die-with-parent does it for the whole sandbox
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _limit(resource.RLIMIT_CORE, 0)
        _limit(resource.RLIMIT_MSGQUEUE, 0)  # POSIX message queues outlive their process: none at all
        _limit(resource.RLIMIT_CPU, limits.cpu_seconds)
        _limit(resource.RLIMIT_FSIZE, limits.file_bytes)
        # every descriptor handed over stays usable under valgrind, which takes the top 10 below the limit
        # for itself: ours are numbered high when the grader holds many files open
        _limit(resource.RLIMIT_NOFILE, max(limits.open_files, max(pass_fds, default=-1) + 1 + 16))
        if limits.memory_bytes:
            _limit(resource.RLIMIT_AS, limits.memory_bytes)
        if uid is not None:  # for the grader's own uid the count would include the grader's processes
            _limit(resource.RLIMIT_NPROC, limits.processes)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # a runner that blocks signals must not pass that on
        # no System V IPC (memory no rlimit counts, which would outlive the run), no internet socket; outside
        # bwrap's pid namespace, no leaving the run's process group (its end kills that group)
        seccomp.install(keep_group=not bubblewrap, writes="anywhere" if bubblewrap else writes)
        if ruleset is not None:  # last: from here on only the allow-list is reachable
            ruleset.enforce()

    return before_exec
