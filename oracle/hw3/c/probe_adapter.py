"""CProbeAdapter: the white-box probes' interface (probe_target.ProbeTarget) over a C submission's driver.

What a probe observes is the grader's own reading, never the driver's report:
- a probe's pools are windows on a memory file (a memfd) that the grader creates, fills and passes to the
  driver: the grader reads each pool back itself;
- the submission's objects (counters, ref_count, the active list, block tables) are read, and the probes'
  white-box edits made, by the grader from its own process while the driver waits for its next request, as a
  graded run's are: not stopped, so nothing tells a probe's reads from a graded run's (outside.py; at the
  addresses the submission's pointers give, in llm_memory.h's layout: probe_state.py); what cannot be read
  there is the submission's failure, with the object and the address.
The driver only runs the API calls (adapter.py's requests) and, over adapter.py's request:

    op P llm_init (target = size, a = the memory file's descriptor, b = 1 for a NULL pool; then offset:u64
         guard:u64), Q whether free() was given the pool at target
    reply = length:u32  status:u8 (3; 2 fatal, as in adapter.py)  kind:u8 (0: the fields; 2: text, unreadable)

One adapter is one driver process: a probe gets its own, with `limit` seconds for everything it does.

A probe's driver is served as a graded run's is (adapter.py): natively every block from the fence's span, every
mapping call answered by the grader's ledger, a stray read or write let go on. Nothing the submission can see
tells a probe from a graded program (tests/submissions/hostile/review4/probe_spotted.patch looked at a block's
address). The probes judge no heap count; after each operation the adapter reads the grader's count of stray
pages, and keeps the first stray as `memory_error`. A stray stops nothing (probes.judge): a read changes no state,
a write lands on a page the driver maps for it, in no live block, so the probe goes on judging what the grader reads
and its verdict stands; the stray is charged to memory_safety alone, through the adapter's Watch (c/stray.py).
"""

import signal
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

from oracle.hw3.c import probe_state
from oracle.hw3.c.adapter import CAdapter, Pointer
from oracle.hw3.c.driver_reply import _REQUEST, _U16
from oracle.hw3.pool import GUARD, GUARD_SIZE
from oracle.child import PYTHON
from oracle.run_cpu import HUNG_WALL, cpu_left
from oracle.native.outside import MachineRefuses
from oracle.hw3.c.stray import Stray, Watch
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.probe_checks import Unavailable
from oracle.hw3.probe_target import Counts, PoolView, SequenceView, calls_until
from oracle.hw3.pool_file import POOL_BYTES_SHOWN
from oracle.sandbox import Limits, Sandbox

PROBE_LIMITS = Limits(cpu_seconds=60, memory_bytes=4 << 30, file_bytes=1 << 20)  # big_pool maps 2 GiB
_INIT = struct.Struct("<BQQ")


class CProbeAdapter(CAdapter):
    # stop_to_read stays CAdapter's: a probe's driver has the seccomp filters (no thread, no handler of the
    # submission's: driver_main.c), so once it has replied nothing of the submission's runs until the next request,
    # and a stop would be a mark it could see (review 14's probe_told_by_sigcont)

    def __init__(self, driver: Path | str, *, limit: float, sandbox: Sandbox | None = None, watch: Watch | None = None):
        super().__init__(driver, timeout=limit, cpu_seconds=PROBE_LIMITS.cpu_seconds,
                         memory_limit=PROBE_LIMITS.memory_bytes, output_limit=PROBE_LIMITS.file_bytes, sandbox=sandbox,
                         watch=watch or Watch([]))
        self.limit = limit
        self.entered: str | None = None  # the API call the probe entered last
        self.memory_error: str | None = None  # the first stray access the grader counted in the run, in words
        self.end_status: int | None = None  # how the driver ended, once it has
        self._last: tuple[int, int, int, int] | None = None  # the last pool: (offset, guard, size, address)
        self._given: dict[int, int] = {}  # engine address -> the pool address llm_init was given

    # ---- plumbing ----

    def _start(self) -> None:
        super()._start()
        self._stop_wait = HUNG_WALL * self.limit  # the wall clock's cap on a stop; the limit is CPU time

    def _left(self) -> float:
        """What is left of the probe's limit: CPU seconds of its run (oracle/run_cpu.py), so that a busy machine
        changes no verdict; every call still ends by the wall-clock cap. The fence's work in the kernel for its own
        mapping calls in the run (grants and frees of the ledger's blocks: Listener.fence) is the grader's, not the
        run's: a call's rule (run_cpu.cpu_left, oracle/SANDBOX.md "A call's time"), for the whole run."""
        assert self._proc is not None
        calls = self._listener.fence if self._listener is not None else 0
        return max(cpu_left(self.limit, calls, self._clock.times()), 1e-3)

    def _stop(self, wait: float) -> tuple[int | None, bool]:
        status, exited = super()._stop(wait)
        self.end_status = status
        return status, exited

    def _receive(self) -> int:
        self.timeout = self._left()
        return super()._receive()

    def _probe(self, op: str, target: int = 0, a: int = 0, b: int = 0, payload: bytes = b"") -> bytes:
        """One probe operation: the fields of its reply."""
        if self._proc is None:
            self._start()
        try:
            self._write_all(_REQUEST.pack(ord(op), -1, target, a, b) + payload)
        except BrokenPipeError:
            raise self._fail("") from None
        self.timeout = self._left()
        data = self._reply_bytes()  # its length bounded before the rest is read
        if data[4] in (2, 4):  # fatal: the driver has exited (4: a memory error, a fault in the heap's guard pages, say)
            (n,) = _U16.unpack_from(data, 5)
            failure = self._fail(data[7 : 7 + n].decode(errors="replace"))
            failure.heap_corrupted = data[4] == 4
            raise failure
        if data[4] != 3:
            raise self._fail("sent a reply the grader cannot read")
        if data[5] == 2:  # a wild pointer in the state read
            (n,) = _U16.unpack_from(data, 6)
            raise ImplementationFailure(data[8 : 8 + n].decode(errors="replace"))
        return data[6:]

    def _outside(self, operation: Any, *args: int) -> Any:
        """CAdapter._outside, with the driver idle; a machine where the grader may not read its runs cannot run
        the probe."""
        try:
            return super()._outside(operation, *args)
        except MachineRefuses as why:
            raise Unavailable(str(why)) from None

    def _init(self, size: int, pattern: bytes | None, null: bool) -> Pointer | None:
        self.entered = "llm_init"
        if self._proc is None:  # started first: a start empties the memory file
            self._start()
        offset, guard = (0, 0) if null else (self._pools.window(size, GUARD, pattern=pattern), GUARD_SIZE)
        assert self.watch is not None
        self.watch.calling("I", size, 0, int(null))
        if not null:  # the window the driver maps (driver_probes.c probe_init): the pool's, by what it maps
            self._expect_window(self._pools.fd, offset, size + 2 * guard)
        if self._native is not None:
            self._native.call_started(-1)
        body = self._probe("P", size, self._pools.fd, int(null), struct.pack("<QQ", offset, guard))
        self._count_strays()
        mapped, engine, base = _INIT.unpack_from(body)
        if not mapped:  # the submission's process says so: a claim, which a process of the grader's checks
            amount = f"{size >> 30 or size} {'GiB' if size >> 30 else 'bytes'}"
            if self._can_map(offset + size + 2 * guard):
                raise self._fail(f"did not map the pool of {amount} it was given, which a process under the same "
                                 "limits maps")
            raise Unavailable(f"no {amount} of address space for the pool")
        if not null:
            self._last = (offset, guard, size, base)
        if engine:
            self._given[engine] = base
        return self._handle(engine)

    def _can_map(self, length: int) -> bool:
        """Whether a process of the grader's, in the same sandbox under the same limits, maps `length` bytes of
        the memory file: the fact an "unavailable" probe rests on, never the driver's word."""
        witness = ("import mmap, os, sys\n"
                   "mmap.mmap(int(sys.argv[1]), int(sys.argv[2]), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)")
        ran = self.box.run([PYTHON, "-I", "-S", "-c", witness, str(self._pools.fd), str(length)],
                           timeout=30, limits=PROBE_LIMITS, pass_fds=(self._pools.fd,))
        return ran.status == 0

    # ---- the interface ----

    def init_pool(self, size: int, pattern: bytes | None) -> Pointer | None:
        return self._init(size, pattern, pattern is None)

    def call(self, api: str, engine: Any, *args: int) -> Any:
        self.entered = api
        before = self._heap.faulted
        returned = getattr(self, api)(engine, *args)  # adapter.py's round trip counts the strays (and notes them)
        self._strayed(before, self._heap.faulted)
        return returned

    def _count_strays(self) -> None:
        """After a probe operation, whose reply says nothing of the heap: the grader's own count of stray pages."""
        if self._native is None:
            return
        if (now := self._native.faulted()) is None:
            raise self._fail("")  # it replied, then ended before the grader could look
        before = self._heap.faulted
        assert self.watch is not None
        self.watch.counted(before, now)
        self._heap = replace(self._heap, faulted=now)
        self._strayed(before, now)

    def _strayed(self, before: int, after: int) -> None:
        """The first stray access of the run, in the last call's words, as `memory_error` (probes.judge)."""
        if after > before and self.memory_error is None:
            assert self.watch is not None
            stray = Stray(self.watch.program, len(self.watch.calls), tuple(self.watch.calls), after - before)
            self.memory_error = f"{stray.call}: {stray.problem()}"

    def calls(self, api: str, engine: Any, args: list[tuple[int, ...]], stop: str) -> list[Any]:
        return calls_until(lambda *one: self.call(api, engine, *one), args, stop)

    def counts(self, engine: Any, limit: int | None = None) -> Counts:
        address = self._address(engine)
        made, pool_base = self._outside(probe_state.counts, address, limit)
        return replace(made, pool_base_ok=pool_base == self._given.get(address))

    def sequence(self, seq: Any) -> SequenceView:
        return self._outside(probe_state.sequence, self._address(seq))

    def move_l2(self, seq: Any, src: int, dst: int) -> None:
        self._outside(probe_state.move_l2, self._address(seq), src, dst)

    def move_entry(self, seq: Any, l1: int, src: int, dst: int) -> None:
        self._outside(probe_state.move_entry, self._address(seq), l1, src, dst)

    def pool(self) -> PoolView:
        """The last pool, read from the memory file (not from the driver): its bytes up to POOL_BYTES_SHOWN, else
        their digest, read a MiB at a time; its guard zones; and whether it was freed."""
        assert self._last is not None, "no pool: init_pool first"
        offset, guard, size, base = self._last
        before, after = self._pools.read(offset, guard), self._pools.read(offset + guard + size, guard)
        data = self._pools.read(offset + guard, size) if size <= POOL_BYTES_SHOWN else None
        digest = self._pools.sha256(offset + guard, size) if data is None else None
        freed = self._probe("Q", base)[0]
        return PoolView(digest, data, before, after, bool(freed))

    def stopped(self, failure: ImplementationFailure) -> str:
        """A crash by its signal (and the last line printed), a hang by the probe's limit, else the failure."""
        if (self.failure or "").startswith("hung:"):
            return f"timed out after {self.limit:g} s"
        if self.end_status is not None and self.end_status < 0 and self.end_status != -signal.SIGKILL:
            lines = self.output.strip().splitlines()
            return f"crashed: {signal.Signals(-self.end_status).name}" + (f" ({lines[-1][:200]})" if lines else "")
        return str(failure)

    def close(self) -> None:
        super().close()
        self._pools.close()  # one driver process a probe: its memory file goes with it

    # ---- big_pool (LargePoolTarget) ----

    def reserve_pool(self, size: int) -> Pointer | None:
        return self._init(size, None, False)

    def set_free(self, engine: Any, free: int) -> None:
        self._outside(probe_state.set_free, self._address(engine), free)

    def map_entry(self, seq: Any, logical: int, block: int) -> None:
        self._outside(probe_state.map_entry, self._address(seq), logical, block)

    def hold_blocks(self, engine: Any, blocks: int, free: int) -> None:
        self._outside(probe_state.hold_blocks, self._address(engine), blocks, 1)
        self._outside(probe_state.set_free, self._address(engine), free)

    def ref_count(self, engine: Any, block: int) -> int:
        return self._outside(probe_state.ref_count, self._address(engine), block)

    def pool_int(self, offset: int) -> int:
        assert self._last is not None, "no pool: reserve_pool first"
        start, guard, _size, _base = self._last
        return struct.unpack("<i", self._pools.read(start + guard + offset, 4))[0]
