"""CAdapter: drives a C submission, built into a driver program by build.py, in a sandboxed process, over
two dedicated pipes (the protocol: driver_reply.py); the submission's stdout/stderr go to a capped file.

A reply says what the call returned (and the process's own heap counters); everything else the grader judges
it reads itself, while the driver waits for its next request:
- the pool is a window on a memory file (a memfd) the grader creates and fills; the driver maps it shared, and
  observe() reads it back from the file;
- the engine (counters, ref_count, the active list, each sequence's tables) is read from the driver's memory,
  from outside its process (outside.py), at the addresses the calls returned, in llm_memory.h's layout
  (probe_state.engine_state); what cannot be read there is the submission's failure, with the object and address;
- natively, the heap's facts are the grader's own: every mapping call of the driver answered by its ledger
  (ledger.py, native_heap.py), or, where no listener came, the fence region's mappings (heap_maps.py).

A reply comes from the submission's process, so it is untrusted: its length is refused before the rest is
read when it is over what any honest reply can hold (driver_reply.REPLY_BOUND), and a reply that does not
parse is the submission's failure, "a reply the grader cannot read".
"""

import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from oracle.hw3.c import probe_state
from oracle.hw3.c.driver_reply import (
    _REQUEST, UNREADABLE, BadReply, CallStats, Fatal, Pointer, _drained, parse_reply, readable_within, reply_length,
)
from oracle.hw3.c.heap_notify import Listener, receive_listener
from oracle.hw3.c.ledger import Ledger, fence_blocks, max_map_count
from oracle.hw3.c.native_heap import NativeHeap
from oracle.hw3.c.log_channel import LogChannel
from oracle.hw3.c.stray import Watch
from oracle.hw3.c.outside import DriverGone, OutsideMemory, Unreachable
from oracle.run_cpu import HUNG_WALL, RunClock
from oracle.sandbox import DeadlinePassed, Limits, Sandbox, shared, signal_label
from oracle.hw3.observation import HeapState, ImplementationFailure, Observation
from oracle.hw3.pool import GUARD, GUARD_SIZE, initial_pool
from oracle.hw3.pool_file import PoolFile


def failure_label(returncode: int) -> str:
    """How a driver that stopped answering ended, in words."""
    return signal_label(-returncode) if returncode < 0 else f"called exit({returncode})"


class CAdapter:
    """The Adapter protocol over a driver program built by oracle.hw3.c.build.

    The driver starts lazily, and again after a failure; `close()` kills its whole process group.
    `fail_allocation(k)` makes the k-th allocation from the next call on return NULL; `last_call` holds
    the last call's CallStats; `output` is what the submission printed (capped at output_limit bytes).
    `program`: the executable the driver's process runs (a wrapper's, valgrind's tool, when there is one), by
    which the grader finds that process in its own process tree. `watch`: where natively each call during which
    the grader counted a stray access is noted (c/stray.py).
    """

    heap_from_outside = True  # natively, the heap's facts are the grader's: its ledger (or the driver's mappings)
    blocks_at_start = False  # natively, each block at its first page's start rather than its last page's end
    LEDGER_START = 60.0  # s the driver may take to hand over its listener (it does so before any submission code)
    stop_to_read = False  # read the driver's memory with it stopped (without the seccomp filter it may have threads)

    def __init__(
        self,
        driver: Path | str,
        *,
        timeout: float = 2.0,
        output_limit: int = 1 << 20,
        cpu_seconds: int = 120,
        memory_limit: int = 1 << 30,
        wrapper: Sequence[str] = (),
        seccomp: bool = True,
        close_timeout: float = 1.0,
        sandbox: Sandbox | None = None,
        pass_fds: Sequence[int] = (),
        log_channel: LogChannel | None = None,
        program: Path | None = None,
        watch: Watch | None = None,
    ):
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
        self.program = program
        self.watch = watch  # natively: each call during which the grader counted a stray access (c/stray.py)
        self.stop_to_read = self.stop_to_read or not seccomp  # no filter: clone is allowed, so threads may run
        self._pools = PoolFile()  # the pools: the grader's memory file, which the driver maps
        self.pass_fds = (*pass_fds, self._pools.fd)
        self.close_timeout = close_timeout
        self.log_channel = log_channel  # valgrind's log: drained whenever the driver is waited for
        self.generation = 0
        self.failure: str | None = None  # the label of the last failure, if any
        self.exit_status: int | None = None  # the driver's exit status after close()
        self.last_call = CallStats(0, 0, False)
        self._proc: subprocess.Popen[bytes] | None = None
        self._cmd = self._reply = -1
        self._output = tempfile.TemporaryFile()
        self._fail_at = -1
        self._window: tuple[int, int, int] | None = None  # the live pool in the file: (offset, guard, size)
        self._owners: set[int] = set()  # the Sequences create and fork returned since the last llm_init
        self._heap = HeapState(0, 0, 0)
        self._deadline = 0.0  # the wall clock's cap on a read of the stopped driver
        self._native: NativeHeap | None = None  # natively: the heap's facts as the grader observes them
        self._listener: Listener | None = None  # natively: every mapping call of the driver, answered by our ledger
        self._memory: OutsideMemory | None = None  # the driver's memory, read from outside (outside.py)

    # ---- process ----

    def _start(self) -> None:
        self._output.seek(0)
        self._output.truncate()
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
        driver = self.box.expose(self.driver)
        limits = Limits(cpu_seconds=self.cpu_seconds, memory_bytes=self.memory_limit if self.seccomp else 0,
                        file_bytes=self.output_limit)
        try:
            self._proc = self.box.popen(
                [*self.wrapper, driver, *args],
                readable=[driver.parent],
                limits=limits,
                stdout=self._output,
                stderr=self._output,
                pass_fds=(cmd_r, reply_w, *self.pass_fds, *([self.log_channel.child_fd] if self.log_channel else []),
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
        self._heap = HeapState(0, 0, 0)
        self._pools.restart()  # the last driver's pools: no process maps them any more
        self._window = None
        self._owners = set()
        self._memory = None
        self._native = self._listener = None
        if ours is not None:
            with ours:
                fd = receive_listener(ours, self.LEDGER_START)
            if fd is not None:  # else no seccomp user notification here: the driver's mappings are read instead
                self._listener = Listener(fd, Ledger(budget=self.memory_limit // 4 if self.seccomp else 1 << 30,
                                                     max_blocks=fence_blocks(max_map_count())))
                os.set_blocking(self._cmd, False)
            self._native = NativeHeap(self._proc, self.box.expose(self.driver), self._listener)
        self._clock = RunClock(self._proc.pid)  # the run's CPU seconds: what a call's timeout judges

    def _stop(self, wait: float) -> tuple[int | None, bool]:
        """Ends the driver and everything in its process group: its exit status, and whether it ended by
        itself within `wait` s. The driver exits on end of input, closing the reply pipe, and so does a
        crashed one: waiting for that end of file costs no polling, unlike Popen.wait(timeout)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None, False
        if self._memory is not None:
            self._memory.close()
            self._memory = None
        self._clock.close()
        os.close(self._cmd)
        exited = wait > 0 and _drained(self._reply, wait, self.log_channel or self._listener)  # type: ignore[arg-type]
        if self._native is not None:
            self._native.close()
            self._native = self._listener = None
        os.close(self._reply)
        self._cmd = self._reply = -1
        # also whatever the submission left in its group or pid namespace; a driver that closed its end has
        # ended or is ending: let bwrap report how before the kill
        status = self.box.stop(proc, grace=1.0 if exited else 0.0)
        return status, exited

    def _fail(self, label: str, wait: float = 1.0) -> ImplementationFailure:
        status, exited = self._stop(wait)
        if label == "":
            killed = status == -signal.SIGKILL and not exited
            label = "stopped answering and did not exit" if killed or status is None else failure_label(status)
        self.failure = label
        return ImplementationFailure(label)

    def close(self) -> None:
        """Stops the driver (letting it exit cleanly on end of input) and kills its process group."""
        if self._proc is not None:
            status, exited = self._stop(self.close_timeout)
            self.exit_status = status if exited else None

    def end_process(self) -> None:
        """Ends the driver (its handles die with it): the next call starts a fresh one (alone.py)."""
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self.close()
        if getattr(self, "_pools", None) is not None:
            self._pools.close()

    @property
    def output(self) -> str:
        """What the submission wrote on stdout and stderr since the driver last started."""
        return os.pread(self._output.fileno(), self.output_limit + 1, 0).decode(errors="replace")

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def fail_allocation(self, k: int | None) -> None:
        """Make the k-th allocation attempt from the next call on return NULL (None: stop injecting)."""
        if k is not None and k < 1:
            raise ValueError("k counts from 1")
        self._fail_at = 0 if k is None else k

    # ---- round trips ----

    def _request(self, op: str, target: int = 0, a: int = 0, b: int = 0, payload: bytes = b"") -> int:
        if self._proc is None:
            self._start()
        # with the ledger the grader fails the grant itself: the driver (whose memory the submission reads) is not
        # told which allocation fails, or it could make that one a decoy it does not need
        told = self._fail_at if self._listener is None else min(self._fail_at, 0)
        try:
            message = _REQUEST.pack(ord(op), told, target, a, b)
        except struct.error as exc:
            raise ValueError(f"argument out of range for a C int: {exc}") from None
        if self._native is not None:
            self._native.call_started(self._fail_at)
        self._fail_at = -1
        if self.watch is not None:
            self.watch.calling(op, target, a, b)
        try:
            self._write_all(message + payload)
        except BrokenPipeError:
            raise self._fail("") from None
        return self._receive()

    def _write_all(self, data: bytes) -> None:
        """Sends a request; the call's time starts here, in wall-clock and in the run's CPU seconds."""
        self._clock.call_started()
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
                ready = readable_within(self._reply, wait, self.log_channel or self._listener)  # type: ignore[arg-type]
                # (valgrind's log drained meanwhile, or the driver's mapping calls answered)
                if not ready and wait < left:  # the grade's deadline, not this call's timeout
                    self._fail("the grade's time limit was reached", wait=0)
                    raise DeadlinePassed()
                if not ready:
                    owed = self._clock.owed(timeout)
                    if owed > 0:  # a busy machine delayed it, not its own doing: it has not had its time yet
                        deadline = time.monotonic() + owed
                        continue
                    raise self._fail(f"hung: no answer within {self.timeout} s", wait=0)
            else:  # no limit: still answer the driver's mapping calls (and drain valgrind's log) while it works
                while not readable_within(self._reply, 60.0, self.log_channel or self._listener):  # type: ignore[arg-type]
                    pass
            chunk = os.read(self._reply, max(n - have, 65536) if have == 0 else n - have)
            if not chunk:
                raise self._fail("")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _reply_bytes(self) -> bytes:
        """One reply, its length checked against REPLY_BOUND before the rest is read."""
        # one deadline for the whole reply, however it trickles in (none without a time limit)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        data = self._read(4, self.timeout, deadline)
        try:
            length = reply_length(data)
        except BadReply as bad:
            raise self._fail(f"{UNREADABLE} ({bad})") from None
        if len(data) < length:
            data += self._read(length - len(data), self.timeout, deadline)
        return data[:length]

    def _receive(self) -> int:
        try:
            said = parse_reply(self._reply_bytes())
        except BadReply as bad:
            raise self._fail(f"{UNREADABLE} ({bad})") from None
        if isinstance(said, Fatal):
            failure = self._fail(said.words)
            failure.heap_corrupted = said.heap
            raise failure
        if self.log_channel is not None:  # what valgrind wrote before the driver replied is this call's
            self.log_channel.drain()
        ret, facts = said
        if self._native is not None:  # natively the grader's own observation (native_heap.py)
            if (seen := self._native.judged(facts, self._heap.live_blocks)) is None:
                raise self._fail("")  # it replied, then ended before the grader could look (a timer of the submission's)
            if self.watch is not None:  # the grader's count only: the driver's reply says none
                self.watch.counted(self._heap.faulted, seen.faulted)
            facts = seen
        self.last_call = CallStats(facts.allocations, facts.frees, facts.injected)
        self._heap = HeapState(facts.allocations, facts.live_blocks, facts.live_bytes, facts.faulted)
        return ret

    def _handle(self, address: int) -> Pointer | None:
        return Pointer(address, self.generation) if address else None

    def _address(self, handle: Any) -> int:
        if handle is None:
            return 0
        if not isinstance(handle, Pointer):
            raise TypeError(f"not a handle from this adapter: {handle!r}")
        if handle.generation != self.generation or self._proc is None:
            raise ImplementationFailure(f"this handle died with the driver: {self.failure or 'restarted'}")
        return handle.address

    # ---- the Adapter protocol ----

    def llm_init(self, pool_size: int, null_pool: bool = False) -> Pointer | None:
        if pool_size < 0:
            raise ValueError("pool_size is a size_t: it cannot be negative")
        if self._proc is None:
            self._start()
        self._window = None
        offset = 0 if null_pool else self._pools.window(pool_size, GUARD, image=initial_pool(pool_size))
        guard = 0 if null_pool else GUARD_SIZE
        engine = self._request("I", pool_size, self._pools.fd, int(null_pool), struct.pack("<QQ", offset, guard))
        self._window = None if null_pool else (offset, guard, pool_size)
        self._owners = set()
        return self._handle(engine)

    def create_sequence(self, engine: Any, seq_id: int, initial_kv_len: int) -> Pointer | None:
        return self._made(self._request("C", self._address(engine), seq_id, initial_kv_len))

    def fork_sequence(self, engine: Any, parent_seq_id: int, new_seq_id: int) -> Pointer | None:
        return self._made(self._request("F", self._address(engine), parent_seq_id, new_seq_id))

    def _made(self, seq: int) -> Pointer | None:
        """A Sequence create or fork returned: the active list may hold it (engine_state)."""
        if seq:
            self._owners.add(seq)
        return self._handle(seq)

    def append_kv(self, engine: Any, seq_id: int, kv_data: int) -> int:
        return self._request("A", self._address(engine), seq_id, kv_data)

    def free_sequence(self, engine: Any, seq_id: int) -> int:
        return self._request("R", self._address(engine), seq_id)

    def llm_destroy(self, engine: Any) -> int:
        return self._request("D", self._address(engine))

    def leak_check(self) -> None:
        """Under valgrind: valgrind checks the heap for leaks now, into its own log (natively: nothing)."""
        self._request("L")

    def observe(self, engine: Any) -> Observation:
        """The pool, read from the memory file, and the engine at `engine`, read from the driver's memory: both by
        the grader, while the driver waits for its next request."""
        if self._window is None:
            return Observation(engine=None, pool=None, heap=self._heap)
        if engine is None:
            return self._seen(None, None)
        return self._outside(self._seen, self._address(engine))  # one moment's pool and engine

    def _seen(self, memory: OutsideMemory | None, address: int | None) -> Observation:
        try:
            state = None if memory is None else probe_state.engine_state(memory, address or 0, self._owners)
        except Unreachable as why:
            raise ImplementationFailure(f"state unreadable: {why}") from None
        assert self._window is not None
        offset, guard, size = self._window
        region = self._pools.read(offset, size + 2 * guard)
        return Observation(engine=state, pool=region[guard : guard + size], guard_before=region[:guard],
                           guard_after=region[guard + size :], heap=self._heap)

    def _outside(self, operation: Any, *args: int) -> Any:
        """operation(memory, *args) on the driver's memory, read (and written: the probes) by the grader from
        outside (outside.py), with the driver stopped where something of the submission could run meanwhile; a
        driver that has ended is failed by how it ended."""
        try:
            if self._memory is None:
                assert self._proc is not None
                self._memory = OutsideMemory.attach(self._proc, self.program or self.box.expose(self.driver), None)
            if not self.stop_to_read:  # the seccomp filter kills clone: no thread, and no handler of its own
                return operation(self._memory, *args)
            deadline = self._deadline or time.monotonic() + HUNG_WALL * (self.timeout or 1.0)
            with self._memory.stopped(deadline):
                return operation(self._memory, *args)
        except DriverGone:
            raise self._fail("") from None
