"""The kernel's channel from the driver's process to the ledger (ledger.py): a seccomp user-notification
listener. driver.c installs, before any submission code runs, a filter that hands every memory-mapping system
call of the process to a listener (and every other call with an argument in the heap's span: the kernel's own access
to the heap, ledger.py kernel_access), and sends the listener's descriptor to the grader on a socket the grader
made (SCM_RIGHTS), closing its own copy, with the places of the memory it mapped for itself before (Handover). Each such call then waits in the kernel until the grader answers it
here: let it run (SECCOMP_USER_NOTIF_FLAG_CONTINUE) or fail it with an errno. The calls' arguments come from
the kernel (registers at the call), never from the process's memory.

The grader answers inline, whenever it waits for the driver (adapter.py's select loops), so a call's counts are
complete once its reply arrives: the driver cannot reply before every system call it made was answered.

Two facts are read from the process itself. A string a handed-over call names in the span (a path, a thread's name:
ledger.py kernel_call), from its memory (/proc/PID/mem, opened once and the notification checked still pending
after each read, so PID is still the caller, waiting: its one thread cannot change the bytes the kernel then reads).
And for a mapping of the pool's window's shape, the file its descriptor names
(`file_of`: /proc/PID/fd/N's device and inode, then the notification checked still pending, so PID is still the
caller). It is the file the kernel maps once the call goes on: the caller waits in the call meanwhile, and nothing
else can change its descriptors, for the driver's process has one thread and no other shares its table (its filter
kills clone, clone3, fork and vfork, installed with the listener's, driver_main.c; io_uring, whose kernel workers
act for a process, is refused to every run, oracle/seccomp.py).
"""

import array
import errno
import fcntl
import os
import select
import socket
import struct
import time
from dataclasses import dataclass

from oracle.native.ledger import BRK_REFUSED, CONTINUE, FileId, Ledger
from oracle.native.outside import open_memory
from oracle.run_cpu import ANSWERED

_NOTIF = struct.Struct("=QII iIQ6Q")  # struct seccomp_notif: id, pid, flags, seccomp_data (nr, arch, ip, args)
_RESP = struct.Struct("=QqiI")  # struct seccomp_notif_resp: id, val, error, flags


def _iowr(nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (ord("!") << 8) | nr


NOTIF_RECV, NOTIF_SEND = _iowr(0, _NOTIF.size), _iowr(1, _RESP.size)
NOTIF_ID_VALID = (2 << 30) | (8 << 16) | (ord("!") << 8) | 2  # _IOR('!', 2, __u64): the number every kernel takes
FLAG_CONTINUE = 1
NO_LISTENER = b"n"  # the driver could not install the filter (no seccomp user notification here)


_REGION = struct.Struct("=QQ")  # one of the driver's own mappings: start, length
MOST_REGIONS = 2  # driver_main.c's reserve_own_memory: the heap's table, the reply buffer


@dataclass(frozen=True)
class Handover:
    """What the driver sends at its start, before any submission code runs: the listener's descriptor, and the
    places (start, length) of the memory it mapped for itself."""

    fd: int
    regions: tuple[tuple[int, int], ...]


def receive_listener(sock: socket.socket, timeout: float) -> Handover | None:
    """The listener descriptor the driver sends at its start, with its own memory's places; None when it says it
    has none, or sends nothing (or more than the protocol holds) within `timeout` s (it ended first)."""
    sock.settimeout(timeout)
    try:
        data, ancillary, _, _ = sock.recvmsg(1 + MOST_REGIONS * _REGION.size + 1, socket.CMSG_SPACE(4))
    except (OSError, TimeoutError):
        return None
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    for extra in fds[1:]:
        os.close(extra)
    regions = data[1:]
    if data[:1] != b"y" or not fds or len(regions) % _REGION.size or len(regions) > MOST_REGIONS * _REGION.size:
        if fds:
            os.close(fds[0])
        return None
    return Handover(fds[0], tuple(_REGION.iter_unpack(regions)))


MAPPING_CALLS_PER_SECOND = 200_000  # the mapping calls one call may make per second of its time limit
# run_cpu.MAPPING_CALL_CPU is what each of the fence's own mapping calls adds to its call's limit (system CPU: the
# fence's work in the kernel), counted by the ledger as it answers a grant or a free of a block it made
# (Ledger.fence_calls). A call of the program's own adds nothing, whatever it is: a mapping call the ledger answers
# (review 16's system_time_bought: 40,000 advices of a page nobody maps bought 1 s of system CPU for the program's
# own system calls) or one handed over because it names the span (a write of a heap buffer: ledger.py
# kernel_access); its wait on the grader is the grader's time (busy) all the same, and it counts towards the bound
# (limit_calls).


class MappingCallsSpent(Exception):
    """The current call made all the mapping calls its limit allows (`Listener.limit_calls`): the next one waits
    unanswered."""


class Listener:
    """A driver's listener descriptor and the ledger it answers from. It keeps the grader's side of each call:
    the mapping calls answered since the call started (`call_handled`), of which the fence's own (`call_fence`: a
    grant or a free of a block the ledger made, Ledger.fence_calls) add the fence's CPU time in the kernel to the
    call's limit (run_cpu.MAPPING_CALL_CPU, cpu_left: to its user and system CPU together, never its user CPU
    alone), the wall-clock seconds the grader spent answering them (`call_busy`: time the
    driver waited on the grader, never its own), and past `limit_calls`' count it answers no more
    (MappingCallsSpent), so the grader's work for one call is bounded by a count."""

    def __init__(self, fd: int, ledger: Ledger):
        self.fd = fd
        self.ledger = ledger
        self.handled = 0
        self.fence = 0  # the fence's own mapping calls among them (Ledger.fence_calls: each adds MAPPING_CALL_CPU)
        self.busy = 0.0  # wall-clock seconds spent answering, from seeing a call waiting to the last answer sent
        self._call = (0, 0.0, 0)  # handled, busy and fence when the current call started
        self._most: int | None = None  # the current call's last mapping call to answer (handled), None: no bound
        self._memory: tuple[int, int] | None = None  # the caller's pid and its /proc/PID/mem, once a string was read

    def call_started(self) -> None:
        self._call, self._most = (self.handled, self.busy, self.fence), None

    def limit_calls(self, most: int | None) -> None:
        """The current call may make `most` mapping calls (counted from its start; None: no bound)."""
        self._most = None if most is None else self._call[0] + most

    @property
    def call_handled(self) -> int:
        return self.handled - self._call[0]

    @property
    def call_busy(self) -> float:
        return self.busy - self._call[1]

    @property
    def call_fence(self) -> int:
        """The fence's own mapping calls answered since the call started (grants and frees of the ledger's blocks,
        never a call of the program's own): what adds run_cpu.MAPPING_CALL_CPU each to the call's limit of user and
        system CPU (run_cpu.cpu_left)."""
        return self.fence - self._call[2]

    def pending(self) -> bool:
        return bool(select.select([self.fd], [], [], 0)[0])

    def answer_one(self) -> bool:
        """Receives one waiting system call and answers it; False when there was none (or the listener is done:
        the process ended)."""
        buf = bytearray(_NOTIF.size)
        try:
            fcntl.ioctl(self.fd, NOTIF_RECV, buf)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.EINTR, errno.EAGAIN):
                return False  # the caller died, or was interrupted, before we took it
            raise
        notif_id, pid, _flags, nr, _arch, _ip, *args = _NOTIF.unpack(buf)
        window, fence = self.ledger.window, self.ledger.fence_calls
        # by what the call asks and maps, never where it was made
        error = self.ledger.answer(nr, tuple(args), lambda fd: self.file_of(notif_id, pid, fd),
                                   lambda address, length: self.bytes_of(notif_id, pid, address, length))
        self.handled += 1
        earned = self.ledger.fence_calls - fence  # a grant or a free of a block the ledger made: the fence's work
        self.fence += earned
        ANSWERED.total += earned  # the count a fuzz's safety net allows the fence's kernel work by
        if error == BRK_REFUSED:  # brk returns the break, never an errno: 0 reads as "not moved"
            reply = _RESP.pack(notif_id, 0, 0, 0)
        else:
            reply = _RESP.pack(notif_id, 0, 0 if error == CONTINUE else -error,
                               FLAG_CONTINUE if error == CONTINUE else 0)
        try:
            fcntl.ioctl(self.fd, NOTIF_SEND, bytearray(reply))
        except OSError as failed:
            if failed.errno != errno.ENOENT:  # the call was interrupted (its process killed) meanwhile
                raise
            # before Linux 5.19 a signal too: the call may come again, a new notification, and the window with it
            self.ledger.window = self.ledger.window or window
        return True

    def file_of(self, notif_id: int, pid: int, fd: int) -> FileId | None:
        """The file descriptor `fd` of the thread `pid` names, waiting in notification `notif_id`: (st_dev, st_ino),
        or None when there is none, the grader may not read it, or the call is gone (PID may be another's now)."""
        try:
            named = os.stat(f"/proc/{pid}/fd/{fd}")
            fcntl.ioctl(self.fd, NOTIF_ID_VALID, struct.pack("=Q", notif_id))
        except OSError:
            return None
        return named.st_dev, named.st_ino

    def bytes_of(self, notif_id: int, pid: int, address: int, length: int) -> bytes | None:
        """`length` bytes of the memory of the thread `pid`, waiting in notification `notif_id`, at `address`; None
        when the grader cannot read them, or the call is gone (PID may be another's now)."""
        try:
            if self._memory is None or self._memory[0] != pid:
                self._forget_memory()
                self._memory = (pid, open_memory(pid, os.O_RDONLY))
            data = os.pread(self._memory[1], length, address)
            fcntl.ioctl(self.fd, NOTIF_ID_VALID, struct.pack("=Q", notif_id))
        except (OSError, OverflowError, ValueError):
            return None
        return data

    def _forget_memory(self) -> None:
        if self._memory is not None:
            os.close(self._memory[1])
            self._memory = None

    def answer_waiting(self) -> None:
        """Answers every system call waiting now; MappingCallsSpent (that one left waiting) past the call's
        bound. The time it takes is the grader's (`busy`)."""
        started = time.monotonic()
        try:
            while self.pending():
                if self._most is not None and self.handled >= self._most:
                    raise MappingCallsSpent()
                if not self.answer_one():
                    break
        finally:
            self.busy += time.monotonic() - started

    drain = answer_waiting  # as a LogChannel: what reply_pipe.drained calls while it waits for the end

    def close(self) -> None:
        self._forget_memory()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
