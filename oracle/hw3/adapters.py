"""Adapters: how the state machine calls an implementation and observes it.

An adapter is any object with these methods; the machine needs nothing else:

    llm_init(pool_size, null_pool=False) -> handle | None   # the adapter owns the pool
    create_sequence(engine, seq_id, initial_kv_len) -> handle | None
    fork_sequence(engine, parent_seq_id, new_seq_id) -> handle | None
    append_kv(engine, seq_id, kv_data) -> int
    free_sequence(engine, seq_id) -> int
    llm_destroy(engine) -> int
    observe(engine) -> Observation
    close() -> None
    end_process() -> None   # optional: ends the process the calls run in; the next call starts one (alone.py)

`engine` is a handle the adapter returned from llm_init, or None for a NULL engine. A call that raises,
crashes or hangs raises ImplementationFailure.
"""

from typing import Any, Callable, Protocol

from oracle.hw3.observation import EngineState, ImplementationFailure, Observation, SequenceState
from oracle.hw3.pool import GUARD, GUARD_SIZE, initial_pool
from oracle.hw3.pyserve import Unreadable, read_engine
from oracle.hw3.spec import API
from oracle.target import load_target

BUILTIN_ENGINE = "engine.llm_memory"  # the family's own Python engine, `--impl engine`


class Adapter(Protocol):
    def llm_init(self, pool_size: int, null_pool: bool = False) -> Any: ...
    def create_sequence(self, engine: Any, seq_id: int, initial_kv_len: int) -> Any: ...
    def fork_sequence(self, engine: Any, parent_seq_id: int, new_seq_id: int) -> Any: ...
    def append_kv(self, engine: Any, seq_id: int, kv_data: int) -> int: ...
    def free_sequence(self, engine: Any, seq_id: int) -> int: ...
    def llm_destroy(self, engine: Any) -> int: ...
    def observe(self, engine: Any) -> Observation: ...
    def close(self) -> None: ...


class PythonAdapter:
    """Drives a Python implementation of the six calls in this process, e.g. the built-in `engine.llm_memory`
    for `pagedcheck fuzz` (grading runs submissions in a child process instead: pyremote.py).

    The implementation's objects are read white-box, with the C structs' field names: the engine's
    `total_local_blocks`, `free_local_blocks`, `ref_count` and `active_seqs` (a circular list of nodes with
    `prev` and `next`); each sequence's `seq_id`, `kv_count`, `block_table` (16 entries, each None or 16
    ints) and `node`. A node is mapped back to its sequence through the sequences create and fork returned.
    The reading is pyserve.read_engine's, the same as in a child process.
    """

    def __init__(self, impl: Any, name: str | None = None):
        missing = [f for f in API if not callable(getattr(impl, f, None))]
        if missing:
            raise ValueError(f"{name or impl!r} does not define {', '.join(missing)}")
        self.impl = impl
        self.name = name or getattr(impl, "__name__", repr(impl))
        self._buffer: bytearray | None = None
        self._pool_size = 0
        self._owners: dict[int, Any] = {}  # id(node) -> sequence, for container_of

    def _call(self, api: str, *args: Any) -> Any:
        try:
            return getattr(self.impl, api)(*args)
        except Exception as exc:  # the implementation's bug, reported as a failing step
            raise ImplementationFailure(f"raised {type(exc).__name__}: {exc}") from exc

    def llm_init(self, pool_size: int, null_pool: bool = False) -> Any:
        self._owners.clear()
        if null_pool:
            self._buffer = None
            return self._call("llm_init", None, pool_size)
        self._buffer = bytearray(GUARD + initial_pool(pool_size) + GUARD)
        self._pool_size = pool_size
        pool = memoryview(self._buffer)[GUARD_SIZE : GUARD_SIZE + pool_size]
        return self._call("llm_init", pool, pool_size)

    def _track(self, seq: Any) -> Any:
        if seq is not None:
            self._owners[id(getattr(seq, "node", seq))] = seq
        return seq

    def create_sequence(self, engine: Any, seq_id: int, initial_kv_len: int) -> Any:
        return self._track(self._call("create_sequence", engine, seq_id, initial_kv_len))

    def fork_sequence(self, engine: Any, parent_seq_id: int, new_seq_id: int) -> Any:
        return self._track(self._call("fork_sequence", engine, parent_seq_id, new_seq_id))

    def append_kv(self, engine: Any, seq_id: int, kv_data: int) -> int:
        return self._call("append_kv", engine, seq_id, kv_data)

    def free_sequence(self, engine: Any, seq_id: int) -> int:
        return self._call("free_sequence", engine, seq_id)

    def llm_destroy(self, engine: Any) -> int:
        return self._call("llm_destroy", engine)

    def close(self) -> None:
        self._buffer = None
        self._owners.clear()

    def observe(self, engine: Any) -> Observation:
        buffer = self._buffer
        if buffer is None:
            return Observation(engine=None, pool=None)
        end = GUARD_SIZE + self._pool_size
        return Observation(
            engine=None if engine is None else self._engine_state(engine),
            pool=bytes(memoryview(buffer)[GUARD_SIZE:end]),
            guard_before=bytes(buffer[:GUARD_SIZE]),
            guard_after=bytes(buffer[end:]),
        )

    def _engine_state(self, engine: Any) -> EngineState:
        try:
            read = read_engine(engine, self._owners)
        except (Unreadable, AttributeError, TypeError) as exc:  # fields missing, or not the C structs' shapes
            raise ImplementationFailure(f"state unreadable: {exc}") from exc
        return _state_of(read)


def _state_of(read: dict) -> EngineState:
    """The EngineState of read_engine's dict, read in this process: its ints are already checked (64-bit ints,
    bounded lists), so what a child's reply needs (pyreply.engine_state) is not asked again."""
    return EngineState(
        total_local_blocks=read["total"], free_local_blocks=read["free"], ref_count=tuple(read["ref_count"]),
        sequences=tuple([SequenceState(seq_id, kv_count, tuple([None if l2 is None else tuple(l2) for l2 in table]))
                         for seq_id, kv_count, table in read["sequences"]]),
        list_error=None if read["list_error"] is None else read["list_error"][:2000])  # as pyreply.text bounds it


def load_python(spec: str) -> Callable[[], PythonAdapter]:
    """An adapter factory for `pkg.module` or `pkg.module:attr`; raises ValueError with a one-line reason."""
    target = load_target(spec)
    PythonAdapter(target, spec)  # validate now, so a bad --impl fails before any run
    return lambda: PythonAdapter(target, spec)
