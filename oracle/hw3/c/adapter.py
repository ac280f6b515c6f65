"""CAdapter: drives a C submission, built into a driver program by build.py, in a sandboxed process over two
dedicated pipes (the process and its pipes: oracle/native/driver_process.py; the protocol: driver_reply.py).

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

    factory = load_c("alice/llm_memory.c")   # built once; each factory() a fresh CAdapter on its driver
"""

import struct
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from oracle.hw3.c import probe_state
from oracle.hw3.c.build import build
from oracle.hw3.c.driver_reply import _REQUEST, REPLY_BOUND, CallStats, Pointer, parse_reply
from oracle.native.driver_process import DriverProcess
from oracle.native.log_channel import LogChannel
from oracle.native.reply_pipe import UNREADABLE, BadReply, Fatal
from oracle.native.outside import DriverGone, OutsideMemory, Unreachable
from oracle.hw3.c.stray import Watch
from oracle.hw3.observation import HeapState, ImplementationFailure, Observation
from oracle.hw3.pool import GUARD, GUARD_SIZE, initial_pool
from oracle.hw3.pool_file import PoolFile
from oracle.run_cpu import HUNG_WALL
from oracle.sandbox import Sandbox


class CAdapter(DriverProcess):
    """The Adapter protocol over a driver program built by oracle.hw3.c.build (its process: driver_process.py).

    `fail_allocation(k)` makes the k-th allocation from the next call on return NULL; `last_call` holds the last
    call's CallStats. `watch`: where natively each call during which the grader counted a stray access is noted
    (c/stray.py).
    """

    stop_to_read = False  # read the driver's memory with it stopped: without the seccomp filters (under valgrind) only
    failure_type = ImplementationFailure  # a failed call is hw3's implementation failure, as a Python one's is
    reply_bound = REPLY_BOUND

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
        self._pools = PoolFile()  # the pools: the grader's memory file, which the driver maps (new for each driver)
        super().__init__(driver, timeout=timeout, output_limit=output_limit, cpu_seconds=cpu_seconds,
                         memory_limit=memory_limit, wrapper=wrapper, seccomp=seccomp, close_timeout=close_timeout,
                         sandbox=sandbox, pass_fds=pass_fds, handed=(self._pools,), log_channel=log_channel,
                         program=program)
        self.watch = watch  # natively: each call during which the grader counted a stray access (c/stray.py)
        self.stop_to_read = self.stop_to_read or not seccomp  # no filter: clone is allowed, so threads may run
        self.last_call = CallStats(0, 0, False)
        self._fail_at = -1
        self._window: tuple[int, int, int] | None = None  # the live pool in the file: (offset, guard, size)
        self._owners: set[int] = set()  # the Sequences create and fork returned since the last llm_init
        self._heap = HeapState(0, 0, 0)
        self._stop_wait = 0.0  # the wall clock's cap on one stop of the driver for a read (0: the call's)
        self._memory: OutsideMemory | None = None  # the driver's memory, read from outside (outside.py)

    def _new_driver(self) -> None:
        self._heap = HeapState(0, 0, 0)
        self._window = None
        self._owners = set()
        self._memory = None

    def _stop(self, wait: float) -> tuple[int | None, bool]:
        if self._proc is not None and self._memory is not None:
            self._memory.close()
            self._memory = None
        return super()._stop(wait)

    def end_process(self) -> None:
        """Ends the driver (its handles die with it): the next call starts a fresh one (alone.py)."""
        self.close()

    def __del__(self) -> None:
        super().__del__()
        if getattr(self, "_pools", None) is not None:
            self._pools.close()

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

    def _receive(self) -> int:
        try:
            said = parse_reply(self._reply_bytes())
        except BadReply as bad:
            raise self._fail(f"{UNREADABLE} ({bad})") from None
        if isinstance(said, Fatal):
            native = self._native is not None  # before _fail, which ends the driver (and its NativeHeap)
            failure = self._fail(said.words)
            # natively no memory error ends a call on the fence (driver.c: each is a stray the grader counts), so a
            # status 4 is the process's word (a reply forged on the pipe, review 7's forged_heap_reply; or the C
            # library's heap, its blocks past the fence's room): a crash like any other, the call's item's
            failure.heap_corrupted = said.heap and not native
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
        self.last_call = CallStats(facts.allocations, facts.frees, facts.injected, facts.asked)
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
        if not null_pool:  # the window the driver maps (driver.c load_pool): the pool's, by what it maps
            self._expect_window(self._pools.fd, offset, pool_size + 2 * guard)
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
        driver that has ended is failed by how it ended; what cannot be read is the submission's failure."""
        try:
            if self._memory is None:
                assert self._proc is not None
                self._memory = OutsideMemory.attach(self._proc, self.program or self.box.expose(self.driver), None)
            if not self.stop_to_read:  # the seccomp filters: clone killed (no thread), no signal action changed (no
                return operation(self._memory, *args)  # handler of its own): idle once it replied, nothing runs
            # a cap on this stop alone, from now: the grader's own work before it (on a busy machine, slow) is no
            # time of the driver's, so it never counts against the driver (a stop itself takes microseconds)
            deadline = time.monotonic() + (self._stop_wait or HUNG_WALL * (self.timeout or 1.0))
            with self._memory.stopped(deadline):
                return operation(self._memory, *args)
        except DriverGone:
            raise self._fail("") from None
        except Unreachable as why:
            raise ImplementationFailure(str(why)) from None


def load_c(submission: Path | str, workdir: Path | str | None = None, **options: Any) -> Callable[[], CAdapter]:
    """An adapter factory for a C submission (llm_memory.c or a directory holding one), built once now, in the
    sandbox, into the private build cache (or `workdir`): a fresh CAdapter on its driver at each call.

    Raises ValueError when the path is bad or the build fails, with the compiler's or linker's words. A
    submission whose only problem is warnings is judged as `grade` judges it: the spec's -Werror makes them
    errors, which the factory carries in `faults` (read by `pagedcheck fuzz`), and it drives the build without
    -Werror. `options` go to CAdapter (timeout, output_limit, sandbox, ...).
    """
    result = build(submission, workdir, options.get("sandbox"))
    if result.graded_driver is None:
        raise ValueError(result.message)
    factory = partial(CAdapter, result.graded_driver, **options)
    factory.faults = () if result.ok else (f"{result.verdict}\n{result.shown_log}".rstrip(),)  # type: ignore[attr-defined]
    return factory
