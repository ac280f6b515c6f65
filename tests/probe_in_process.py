"""A ProbeTarget over a Python implementation loaded in the test's own process, edits included: the tests' own
variants (tests/broken/probes/*.patch), trusted code, so the probes that rest on an edit (probes.RESTS_ON),
written once for C and Python, keep their unit tests on Python variants. A graded Python submission never gets
such a target: its objects are not edited by the grader (oracle/hw3/evidence.py), and those probes are not
graded for it (tests/test_pyprobes.py checks that too).
"""

import hashlib
from typing import Any

from oracle.target import load_target
from oracle.hw3.pool import GUARD, GUARD_SIZE
from oracle.hw3.pool_file import POOL_BYTES_SHOWN
from oracle.hw3.probe_target import Counts, PoolView, SequenceView, calls_until
from oracle.hw3.engine_objects import read_table
from oracle.hw3.spec import UNMAPPED


class InProcessTarget:
    """The probe interface on `spec`'s six calls, run here; a pool is a bytearray between guard zones."""

    def __init__(self, spec: str):
        self.impl = load_target(spec)
        self.entered: str | None = None
        self._buffer: bytearray | None = None
        self._size = 0

    def init_pool(self, size: int, pattern: bytes | None) -> Any:
        self.entered = "llm_init"
        if pattern is None:
            self._buffer = None
            return self.impl.llm_init(None, size)
        self._buffer = bytearray(GUARD + (pattern * (size // len(pattern) + 1))[:size] + GUARD)
        self._size = size
        return self.impl.llm_init(memoryview(self._buffer)[GUARD_SIZE:GUARD_SIZE + size], size)

    def call(self, api: str, engine: Any, *args: int) -> Any:
        self.entered = api
        return getattr(self.impl, api)(engine, *args)

    def calls(self, api: str, engine: Any, args: list[tuple[int, ...]], stop: str) -> list[Any]:
        return calls_until(lambda *one: self.call(api, engine, *one), args, stop)

    def counts(self, engine: Any, limit: int | None = None) -> Counts:
        head, n = engine.active_seqs, 0
        node = head.next
        while limit is not None and node is not head and n <= limit:
            n, node = n + 1, node.next
        return Counts(engine.total_local_blocks, engine.free_local_blocks, tuple(engine.ref_count),
                      None if limit is None else n, head.next is head and head.prev is head)

    def sequence(self, seq: Any) -> SequenceView:
        table = read_table(seq, None)
        return SequenceView(seq.seq_id, seq.kv_count, tuple(None if l2 is None else tuple(l2) for l2 in table),
                            tuple(None if l2 is None else id(l2) for l2 in seq.block_table))

    def move_l2(self, seq: Any, src: int, dst: int) -> None:
        seq.block_table[dst], seq.block_table[src] = seq.block_table[src], None

    def move_entry(self, seq: Any, l1: int, src: int, dst: int) -> None:
        l2 = seq.block_table[l1]
        l2[dst], l2[src] = l2[src], UNMAPPED

    def set_free(self, engine: Any, free: int) -> None:
        engine.free_local_blocks = free

    def pool(self) -> PoolView:
        assert self._buffer is not None
        data = bytes(self._buffer[GUARD_SIZE:GUARD_SIZE + self._size])
        shown = data if self._size <= POOL_BYTES_SHOWN else None
        return PoolView(None if shown is not None else hashlib.sha256(data).hexdigest(), shown,
                        bytes(self._buffer[:GUARD_SIZE]), bytes(self._buffer[GUARD_SIZE + self._size:]))

    def stopped(self, failure: Exception) -> str:
        return str(failure)

    def close(self) -> None:
        self._buffer = None
