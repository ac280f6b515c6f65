"""The driver program of a C submission (built by build.py) as a process: started in the sandbox, lazily and
again after a failure, with its two dedicated pipes (a reply's frame: reply_pipe.py) and its stdout/stderr going
to a capped file, new for each driver as the files it is handed are (oracle/handed.py); natively, every mapping
call it makes answered by the grader's ledger (ledger.py, native_heap.py). A request is written whole and a reply
read within the call's time, judged in the run's CPU seconds (oracle/run_cpu.py); a driver that stops answering is
failed by how it ended. A family's adapter speaks its API over it, and passes in its facts: the longest honest
reply of its layout (`reply_bound`) and the failure it raises (`failure_type`, DriverFailure by default).

The driver's command line, which every family's driver.c reads the same way: the request pipe, the reply pipe,
its CPU seconds, its output limit, its address-space limit (0: none), whether it installs its seccomp filter,
valgrind's log descriptor (-1: none), then natively the socket for its listener and whether blocks lie at their
first page's start, vm.max_map_count, and under valgrind the answers to a run that may write nowhere (a BPF program in
hexadecimal: oracle/seccomp.py writes_program, installed by the driver once valgrind's start files are made)."""

import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Sequence

from oracle.handed import Handed, Renewable
from oracle.native.heap_notify import MAPPING_CALLS_PER_SECOND, Listener, MappingCallsSpent, receive_listener
from oracle.native.ledger import Ledger, fence_blocks, max_map_count
from oracle.native.log_channel import LogChannel
from oracle.native.native_heap import NativeHeap
from oracle.native.reply_pipe import UNREADABLE, BadReply, drained, readable_within, reply_length
from oracle.run_cpu import RunClock
from oracle.run_limits import signal_label
from oracle.sandbox import DeadlinePassed, Limits, Sandbox, shared
from oracle.seccomp import writes_program


class DriverFailure(Exception):
    """The driver did not answer a call normally: it crashed, exited, hung, or sent a reply the grader cannot
    read. The message says which; a family's adapter raises its own type instead (`failure_type`)."""


def failure_label(returncode: int) -> str:
    """How a driver that stopped answering ended, in words."""
    return signal_label(-returncode) if returncode < 0 else f"called exit({returncode})"


class DriverProcess:
    """One driver program at a time, in its process group; `close()` kills the whole group. `program`: the
    executable the driver's process runs (a wrapper's, valgrind's tool, when there is one), by which the grader
    finds that process in its own process tree; `output` is what the submission printed (capped at output_limit
    bytes); `generation` counts the drivers started."""

    heap_from_outside = True  # natively, the heap's facts are the grader's: its ledger (or the driver's mappings)
    blocks_at_start = False  # natively, each block at its first page's start rather than its last page's end
    LEDGER_START = 60.0  # s the driver may take to hand over its listener (it does so before any submission code)
    failure_type: type[Exception] = DriverFailure  # what a failed call raises: the family's own type
    reply_bound: int  # the most bytes an honest reply of the family's layout holds

    def __init__(self, driver: Path | str, *, timeout: float, output_limit: int, cpu_seconds: int, memory_limit: int,
                 wrapper: Sequence[str], seccomp: bool, close_timeout: float, sandbox: Sandbox | None,
                 pass_fds: Sequence[int], handed: Sequence[Renewable], log_channel: LogChannel | None,
                 program: Path | None):
        self.driver = Path(driver)
        if not self.driver.is_file():
            raise ValueError(f"driver {self.driver} does not exist; build the submission first")
        self.timeout = timeout
        self.output_limit = output_limit
        self.cpu_seconds = cpu_seconds
        self.memory_limit = memory_limit
        self.wrapper = tuple(wrapper)
        self.seccomp = seccomp
        self.box = sandbox or shared()
        self.program = self.box.executable(program) if program is not None else None  # the frozen copy's, maybe
        self.pass_fds = tuple(pass_fds)
        self.close_timeout = close_timeout
        self.log_channel = log_channel  # valgrind's log: drained whenever the driver is waited for
        self.generation = 0
        self.failure: str | None = None  # the label of the last failure, if any
        self.exit_status: int | None = None  # the driver's exit status after close()
        self._proc: subprocess.Popen[bytes] | None = None
        self._cmd = self._reply = -1
        self.handed = Handed(output_limit, handed)  # its output file and `handed`, new for each driver
        self._native: NativeHeap | None = None  # natively: the heap's facts as the grader observes them
        self._listener: Listener | None = None  # natively: every mapping call of the driver, answered by our ledger

    def _start(self) -> None:
        self._new_driver()
        self.handed.renew()  # before the driver exists: nothing an earlier one left in its files reaches it
        cmd_r, cmd_w = os.pipe()
        reply_r, reply_w = os.pipe()
        args = [str(cmd_r), str(reply_w), str(self.cpu_seconds), str(self.output_limit)]
        args += [str(self.memory_limit if self.seccomp else 0), str(int(self.seccomp))]
        # the driver closes valgrind's descriptor before any submission code
        args.append(str(self.log_channel.child_fd if self.log_channel is not None else -1))
        ours = theirs = None
        if self.heap_from_outside and not self.wrapper:  # natively: the kernel hands us its mapping calls
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            args += [str(theirs.fileno()), str(int(self.blocks_at_start))]
        else:
            args += ["-1", "0"]  # no listener, nothing at start: as when absent
        args.append(str(max_map_count()))  # the fence's room as the ledger counts it: the run has no /proc to read
        if self.log_channel is not None:  # under valgrind: the answers to a run that writes nowhere, once it started
            args.append(told.hex() if (told := writes_program("nowhere")) else "-")
        driver = self.box.expose(self.driver)
        limits = Limits(cpu_seconds=self.cpu_seconds, memory_bytes=self.memory_limit if self.seccomp else 0,
                        file_bytes=self.output_limit)
        try:
            self._proc = self.box.popen(
                [*self.wrapper, driver, *args],
                readable=[driver.parent],
                limits=limits,
                # natively a driver writes nowhere under either isolation (oracle/run_view.py): only valgrind
                # needs a folder (its client's command line, at start), sealed once it has started
                private_tmp=bool(self.wrapper) and self.log_channel is None,
                start_folder=self.log_channel is not None,
                procfs=bool(self.wrapper),  # valgrind reads /proc/self/maps; a driver alone needs no procfs
                stdout=self.handed.output,
                stderr=self.handed.output,
                pass_fds=(cmd_r, reply_w, *self.pass_fds, *self.handed.fds,
                          *([self.log_channel.child_fd] if self.log_channel else []),
                          *([theirs.fileno()] if theirs else [])),
            )
        except BaseException:
            if ours is not None:
                ours.close()
            raise
        finally:
            os.close(cmd_r)
            os.close(reply_w)
            if theirs is not None:
                theirs.close()
        self._cmd, self._reply = cmd_w, reply_r
        self.generation += 1
        self.failure = None
        self.exit_status = None
        self._native = self._listener = None
        if ours is not None:
            with ours:
                handover = receive_listener(ours, self.LEDGER_START)
            if handover is not None:  # else no seccomp user notification here: the driver's mappings are read instead
                self._listener = Listener(handover.fd, Ledger(
                    budget=self.memory_limit // 4 if self.seccomp else 1 << 30,
                    max_blocks=fence_blocks(max_map_count()), driver_regions=handover.regions))
                os.set_blocking(self._cmd, False)
            self._native = NativeHeap(self._proc, self.box.expose(self.driver), self._listener)
        self._clock = RunClock(self._proc.pid)  # the run's CPU seconds: what a call's timeout judges
        if self.log_channel is not None:
            self._seal_start_folder()

    def _seal_start_folder(self) -> None:
        """Under valgrind: waits for the driver's first byte (valgrind has written and removed its client's files in
        its start folder, and no code of the submission's has run: driver_main.c), then has the sandbox seal that
        folder, so the submission writes nowhere under any isolation (oracle/SANDBOX.md "What a run may write")."""
        assert self._proc is not None
        left = max(self.close_timeout or 0.0, self.timeout or 0.0, 30.0)
        try:
            wait = self.box.wait_limit(left)
        except DeadlinePassed:
            self._fail("the grade's time limit was reached", wait=0)
            raise
        if not readable_within(self._reply, wait, self.log_channel):
            if wait < left:
                self._fail("the grade's time limit was reached", wait=0)
                raise DeadlinePassed()
            raise self._fail(f"valgrind did not start within {left:g} s", wait=0)
        if os.read(self._reply, 1) != b"S":
            raise self._fail("")
        self.box.seal(self._proc)

    def _expect_window(self, fd: int, offset: int, length: int) -> None:
        """The next request carries a pool: the driver maps `length` bytes of the grader's memory file `fd` at
        `offset` for it (MAP_SHARED, read-write), which the ledger then takes for the pool's, not a block, when the
        descriptor the driver names is that file still. Before the request's call_started."""
        if self._listener is not None:  # the file as the kernel knows it: the driver's number may name another by then
            named = os.fstat(fd)
            self._listener.ledger.expect_window((named.st_dev, named.st_ino), offset, length)

    def _new_driver(self) -> None:
        """What a new driver process makes stale (the adapter's view of the last one)."""

    def _stop(self, wait: float) -> tuple[int | None, bool]:
        """Ends the driver and everything in its process group: its exit status, and whether it ended by
        itself within `wait` s. The driver exits on end of input, closing the reply pipe, and so does a
        crashed one: waiting for that end of file costs no polling, unlike Popen.wait(timeout)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None, False
        self._clock.close()
        if self._listener is not None:
            self._listener.limit_calls(None)  # its last mapping calls answered while it ends, within `wait`
        os.close(self._cmd)
        exited = wait > 0 and drained(self._reply, wait, self.log_channel or self._listener)
        if self._native is not None:
            self._native.close()
            self._native = self._listener = None
        os.close(self._reply)
        self._cmd = self._reply = -1
        # also whatever the submission left in its group or pid namespace; a driver that closed its end has
        # ended or is ending: let bwrap report how before the kill
        status = self.box.stop(proc, grace=1.0 if exited else 0.0)
        return status, exited

    def _fail(self, label: str, wait: float = 1.0) -> Exception:
        status, exited = self._stop(wait)
        if label == "":
            killed = status == -signal.SIGKILL and not exited
            label = "stopped answering and did not exit" if killed or status is None else failure_label(status)
        self.failure = label
        return self.failure_type(label)

    def close(self) -> None:
        """Stops the driver (letting it exit cleanly on end of input) and kills its process group."""
        if self._proc is not None:
            status, exited = self._stop(self.close_timeout)
            self.exit_status = status if exited else None

    def __del__(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self.close()

    @property
    def output(self) -> str:
        """What the submission wrote on stdout and stderr since the driver last started."""
        return self.handed.printed()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    # ---- the pipes ----

    def _write_all(self, data: bytes) -> None:
        """Sends a request; the call's time starts here, in wall-clock and in the run's CPU seconds."""
        self._clock.call_started()
        if self._listener is not None:
            self._listener.call_started()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._cmd, view) :]
            except BlockingIOError:  # the pipe is full (with the ledger, non-blocking): the driver may be waiting
                assert self._listener is not None  # for an answer to a mapping call (the pool's) before it reads on
                if select.select([self._listener.fd], [self._cmd], [])[0]:
                    self._listener.answer_waiting()

    def _read(self, n: int, timeout: float | None, deadline: float | None = None) -> bytes:
        """n bytes of the reply pipe, all of them by `deadline` (default: `timeout` s from now), or a failure."""
        if timeout is not None and deadline is None:
            deadline = time.monotonic() + timeout
        chunks, have = [], 0
        while have < n:
            if timeout is not None and deadline is not None:
                left = max(deadline - time.monotonic(), 0.0)
                try:
                    wait = self.box.wait_limit(left)
                except DeadlinePassed:
                    self._fail("the grade's time limit was reached", wait=0)
                    raise
                try:
                    ready = readable_within(self._reply, wait, self.log_channel or self._listener)
                    # (valgrind's log drained meanwhile, or the driver's mapping calls answered)
                except MappingCallsSpent:
                    raise self._fail(self._spent(timeout), wait=0) from None
                if not ready and wait < left:  # cut short for the grade's time limit: asked again
                    continue
                if not ready:
                    owed = self._clock.owed(timeout) if self._listener is None else self._clock.owed(
                        timeout, self._listener.call_busy, self._listener.call_fence)
                    # (the fence's work in the kernel for its own mapping calls, and the wall clock it waited on the
                    # grader's answers to any, are the grader's, not its own: run_cpu.cpu_left)
                    if owed > 0:  # a busy machine delayed it, not its own doing: it has not had its time yet
                        deadline = time.monotonic() + owed
                        continue
                    raise self._fail(f"hung: no answer within {self.timeout} s", wait=0)
            else:  # no limit: still answer the driver's mapping calls (and drain valgrind's log) while it works
                while not readable_within(self._reply, 60.0, self.log_channel or self._listener):
                    pass
            chunk = os.read(self._reply, max(n - have, 65536) if have == 0 else n - have)
            if not chunk:
                raise self._fail("")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _spent(self, timeout: float) -> str:
        assert self._listener is not None
        return (f"hung: no answer within {self.timeout} s (it made {self._listener.call_handled:,} allocations, frees, "
                f"other memory-mapping calls and system calls on heap memory, the most a call may make in a limit of "
                f"{timeout:g} s: "
                f"{MAPPING_CALLS_PER_SECOND:,} a second)")

    def _reply_bytes(self) -> bytes:
        """One reply, its length checked against `reply_bound` before the rest is read."""
        if self._listener is not None:  # the grader's answers for the call, bounded by a count its limit sets
            self._listener.limit_calls(None if self.timeout is None else round(MAPPING_CALLS_PER_SECOND * self.timeout))
        # one deadline for the whole reply, however it trickles in (none without a time limit)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        data = self._read(4, self.timeout, deadline)
        try:
            length = reply_length(data, self.reply_bound)
        except BadReply as bad:
            raise self._fail(f"{UNREADABLE} ({bad})") from None
        if len(data) < length:
            data += self._read(length - len(data), self.timeout, deadline)
        return data[:length]
