"""The submission's memory, read and written by the grader itself, from its own process (/proc/PID/mem).

A family's white-box reading (a graded run's observation of the submission's objects, a probe's reads and
edits) goes through here. Code in the submission's process can find and rewrite whatever that process holds, the
driver's reply buffer and its request loop included, and could write on the reply pipe itself; so the bytes a
verdict rests on are read here, by the grader, never reported by the driver. The addresses come from the
submission anyway (the handles its calls returned, the pointers in its structs, whose layout the family's header
fixes); the bytes at them are the grader's reading.

    memory = OutsideMemory.attach(proc, program)   # after the driver has answered once
    record = memory.read(address, 40, "your record")  # natively, between a reply and the next request
    with memory.stopped(deadline):                     # under valgrind (no seccomp filter: threads may run)
        record = memory.read(address, 40, "your record")

Which process: the one the grader started, found by construction, never a pid the child reports. From the
Popen (bwrap, or the supervisor shell without bubblewrap) down the process tree to the one process whose
executable is the driver program the grader exposed (its device and inode): the supervisor's shell, bwrap
and the watcher run other programs, and a probe's driver can start none (its seccomp filter kills fork,
clone and execve), so under bubblewrap's pid namespace and outside it that process is the driver.
/proc/PID/mem is opened once, while the driver is known alive: the descriptor keeps that process's memory,
so a pid reused after the driver died can never be read instead; signals go through a pidfd likewise.

Idle, not stopped: every read or edit happens while the driver waits in its read of the next request (it has
replied and the grader has not sent another), so nothing of the submission's can run meanwhile: natively the driver's
seccomp filters (oracle/native/driver_main.c) kill clone (no thread) and refuse every new signal action and signal
stack once the driver's own are in place (keep_own_handlers: no handler of the submission's, so a timer's signal can
only end the process), and only the grader ends that read. So a graded run's reads and a probe's reads and edits
alike are made with the driver running, and nothing the process can see tells one from the other: a stop would be a
mark (a process continued by a SIGCONT it blocks keeps it pending: review 14's probe_told_by_sigcont). `stopped`
(SIGSTOP, then SIGCONT through the pidfd, every task in /proc/PID/task waited for) is for a driver without those
filters alone: under valgrind (the memcheck runs), where clone is allowed and a thread of the submission's may run
while the grader reads.

What cannot be read or written (an address the process does not map, a memory it made unreadable) raises
Unreachable, the submission's failure on that item (the family's adapter makes it its own failure type), with the
object and the address in the words of a C student. Only when the grader cannot open the process it started
itself either (bwrap, or the supervisor shell: the run's uid) is it the machine's doing (MachineRefuses: the
probe cannot run here).
"""

import errno
import os
import select
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen
from typing import Iterator

from oracle.native.heap_maps import unreadable
from oracle.child import PYTHON  # the system's: a run's uid may run it (the grader's own may be out of reach)
from oracle.run_cpu import children

_STOPPED = {"T", "t", "Z", "X"}  # /proc/PID/stat states of a task that runs no code


class Unreachable(Exception):
    """The grader could not read or write the submission's memory where its own pointers say an object is: the
    submission's failure (a family's adapter raises it as its own)."""


class DriverGone(Exception):
    """The driver process ended (the adapter words how, from its exit status)."""


class MachineRefuses(Exception):
    """The grader cannot read its runs' memory on this machine at all (no ptrace access to them): the control,
    the shell of the grader's that started the driver, same uid and sandbox, is refused too."""


# Run as the owner of process argv[1] (root without CAP_SYS_PTRACE may not look into another uid's process, but
# may become that uid, and a process may look into its own uid's): sends back the device and inode of its
# executable and the files of /proc/PID named in argv[3] (comma-separated: "mem" read-write, "maps" read-only),
# opened, or the errno that refused one.
_AS_OWNER = """
import os, socket, sys
out = socket.socket(fileno=int(sys.argv[2]))
try:
    exe = os.stat(f"/proc/{sys.argv[1]}/exe")
    fds = [os.open(f"/proc/{sys.argv[1]}/{name}", (os.O_RDWR if name == "mem" else os.O_RDONLY) | os.O_CLOEXEC)
           for name in sys.argv[3].split(",") if name]
except OSError as exc:
    out.sendall(b"%d" % (exc.errno or 13))
else:
    socket.send_fds(out, [b"%d %d" % (exe.st_dev, exe.st_ino)], fds)
"""


def _as_owner_files(pid: int, names: tuple[str, ...]) -> tuple[tuple[int, int], list[int]]:
    """The (device, inode) of process `pid`'s executable and its /proc/PID files `names` ("mem" read-write,
    "maps"), opened as the process's own uid: for a grader that is root without CAP_SYS_PTRACE (a container's
    default), whose runs each have a uid of their own. Raises OSError as the refusal's errno."""
    if os.geteuid() != 0:
        raise PermissionError(errno.EPERM, "not root")
    with open(f"/proc/{pid}/status") as status:
        ids = {line.split(":")[0]: line.split()[1] for line in status if line.startswith(("Uid:", "Gid:"))}
    if set(ids) != {"Uid", "Gid"}:
        raise PermissionError(errno.EACCES, "no owner to look as")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        done = subprocess.run([PYTHON, "-I", "-S", "-c", _AS_OWNER, str(pid), str(theirs.fileno()), ",".join(names)],
                              user=int(ids["Uid"]), group=int(ids["Gid"]), extra_groups=[], pass_fds=(theirs.fileno(),),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        theirs.close()
        message, fds, _flags, _addr = socket.recv_fds(ours, 64, len(names) or 1)
    if done.returncode != 0 or not message:
        for fd in fds:
            os.close(fd)
        raise PermissionError(errno.EACCES, "the grader's look as the run's uid failed")
    if b" " not in message:
        raise OSError(int(message), os.strerror(int(message)))
    dev, ino = (int(part) for part in message.split())
    if len(fds) != len(names):
        for fd in fds:
            os.close(fd)
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    return (dev, ino), fds


def _as_owner(pid: int, open_memory: bool) -> tuple[tuple[int, int], int | None]:
    """The (device, inode) of process `pid`'s executable and, with `open_memory`, its memory opened read-write,
    as the process's own uid sees them (_as_owner_files)."""
    seen, fds = _as_owner_files(pid, ("mem",) if open_memory else ())
    return seen, (fds[0] if fds else None)


def _is_program(pid: int, program: os.stat_result) -> bool | None:
    """Whether process `pid` runs `program`; None when the grader may not look (its executable is refused)."""
    try:
        exe = os.stat(f"/proc/{pid}/exe")
        seen = (exe.st_dev, exe.st_ino)
    except PermissionError:
        try:
            seen, _ = _as_owner(pid, open_memory=False)
        except (OSError, subprocess.SubprocessError):
            return None
    except OSError:
        return False
    return seen == (program.st_dev, program.st_ino)


def _open_files(pid: int) -> tuple[int, int]:
    """Process `pid`'s /proc/PID/mem (read-write) and /proc/PID/maps, opened by the grader, else as the process's
    own uid (_as_owner_files)."""
    try:
        mem = os.open(f"/proc/{pid}/mem", os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        try:
            _, (mem, maps) = _as_owner_files(pid, ("mem", "maps"))
        except subprocess.SubprocessError:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES)) from None
        return mem, maps
    try:
        return mem, os.open(f"/proc/{pid}/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        os.close(mem)
        raise


def open_memory(pid: int, flags: int) -> int:
    """Process `pid`'s /proc/PID/mem, opened by the grader, else as the process's own uid (_as_owner)."""
    try:
        return os.open(f"/proc/{pid}/mem", flags | os.O_CLOEXEC)
    except PermissionError:
        try:
            _, fd = _as_owner(pid, open_memory=True)
        except subprocess.SubprocessError:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES)) from None
        assert fd is not None
        return fd


def driver_pid(proc: Popen, program: Path) -> tuple[int | None, bool]:
    """The host pid of the one process under `proc` that runs `program` (None when there is not exactly one),
    and whether the grader was refused a look at some process of the tree."""
    wanted = os.stat(program)
    todo, found, refused = [proc.pid], [], False
    for _depth in range(6):  # bwrap, its pid 1, the supervisor, the driver: a few levels at most
        for pid in todo:
            runs = _is_program(pid, wanted)
            found += [pid] if runs else []
            refused |= runs is None
        todo = [child for pid in todo for child in children(pid)]
        if not todo:
            break
    return (found[0] if len(found) == 1 else None), refused


def _refused(proc: Popen, why: str) -> Exception:
    """The failure for a driver the grader may not open: the submission's (Unreachable), unless the grader may
    not open the process it started itself either (bwrap, or the supervisor shell: the run's uid, a process
    the submission cannot signal, trace or change), which is the machine's (MachineRefuses)."""
    try:
        os.close(open_memory(proc.pid, os.O_RDONLY))
    except OSError:
        return MachineRefuses(f"the grader cannot read its runs' memory here ({why}): it needs ptrace access to "
                              "them (root with CAP_SYS_PTRACE, or the same uid under Yama ptrace_scope 0 or 1)")
    return Unreachable(f"the grader could not open your program's memory: {why}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.EIO:
        return "your program does not map that address"
    if isinstance(exc, (OverflowError, ValueError)):
        return "no program maps that address"
    return os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)


class OutsideMemory:
    """One driver process's memory, as the grader reads and writes it from outside."""

    def __init__(self, pid: int, mem: int, pidfd: int, maps: int = -1):
        self.pid, self._mem, self._pidfd, self._maps = pid, mem, pidfd, maps

    @classmethod
    def attach(cls, proc: Popen, program: Path, known: int | None = None) -> "OutsideMemory":
        """The memory of the driver `proc` started (running `program`, the grader's exposed copy; `known`: its pid
        as the grader found it in its own process tree already, heap_maps.driver_pid). Raises Unreachable when
        it cannot be found or opened, DriverGone when it has ended."""
        pid, refused = (known, False) if known is not None else driver_pid(proc, program)
        if pid is None:
            if proc.poll() is not None:
                raise DriverGone()
            if refused:
                raise _refused(proc, os.strerror(errno.EACCES))
            raise Unreachable("the grader could not find your program's process (it must not start processes)")
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            raise DriverGone() from None
        try:
            mem, maps = _open_files(pid)
        except OSError as exc:
            os.close(pidfd)
            raise _refused(proc, _why(exc)) from None
        memory = cls(pid, mem, pidfd, maps)
        if memory.ended:  # the pid named another process by the time it was opened
            memory.close()
            raise DriverGone()
        return memory

    def close(self) -> None:
        for fd in (self._mem, self._pidfd, self._maps):
            if fd >= 0:
                os.close(fd)
        self._mem = self._pidfd = self._maps = -1

    @property
    def ended(self) -> bool:
        return bool(select.select([self._pidfd], [], [], 0)[0])

    def read(self, address: int, length: int, what: str) -> bytes:
        """`length` bytes at `address`, where the process itself may read them; `what` names the object for the
        message ("your table's counts")."""
        why = unreadable(self._maps, address, length) if length and self._maps >= 0 and 0 <= address < 1 << 64 else None
        if why is not None:
            self._check_alive()
            raise Unreachable(f"the grader could not read {what} at 0x{address:x}: {why}")
        try:
            data = os.pread(self._mem, length, address) if length else b""
        except (OSError, OverflowError, ValueError) as exc:
            raise Unreachable(f"the grader could not read {what} at 0x{address:x}: {_why(exc)}") from None
        if len(data) != length:
            self._check_alive()
            raise Unreachable(f"the grader could not read {what} at 0x{address:x}: only {len(data)} of its "
                              f"{length} bytes are mapped")
        return data

    def write(self, address: int, data: bytes, what: str) -> None:
        try:
            done = os.pwrite(self._mem, data, address)
        except (OSError, OverflowError, ValueError) as exc:
            raise Unreachable(f"the grader could not write {what} at 0x{address:x}: {_why(exc)}") from None
        if done != len(data):
            self._check_alive()
            raise Unreachable(f"the grader could not write {what} at 0x{address:x}: only {done} of its "
                              f"{len(data)} bytes are mapped")

    def _check_alive(self) -> None:
        if self.ended:
            raise DriverGone()

    def _signal(self, sig: int) -> None:
        try:
            signal.pidfd_send_signal(self._pidfd, sig)
        except ProcessLookupError:
            raise DriverGone() from None

    def _all_stopped(self) -> bool:
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
            for task in tasks:
                with open(f"/proc/{self.pid}/task/{task}/stat") as stat:
                    if stat.read().rpartition(")")[2].split()[0] not in _STOPPED:
                        return False
        except OSError:
            self._check_alive()
            return False
        return True

    @contextmanager
    def stopped(self, deadline: float) -> Iterator["OutsideMemory"]:
        """The driver stopped (every task) for the block's reads and writes, continued after. Raises DriverGone
        when it ends meanwhile, Unreachable when it has not stopped by `deadline` (time.monotonic())."""
        self._signal(signal.SIGSTOP)
        try:
            pause = 1e-5
            while not self._all_stopped():
                self._check_alive()
                if time.monotonic() > deadline:
                    raise Unreachable("your program did not stop when the grader stopped it to read its state")
                time.sleep(pause)
                pause = min(pause * 2, 1e-2)
            self._check_alive()  # the pid is ours: stopped, so not reaped and not reused
            yield self
        finally:
            if self._pidfd >= 0 and not self.ended:
                self._signal(signal.SIGCONT)
