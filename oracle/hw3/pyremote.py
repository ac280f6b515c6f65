"""A Python submission graded from outside, on the core's remote implementation (oracle/served.py): the submission
runs in a sandboxed child (pyserve.py over oracle/child.py's process and pipes), and the grader holds the core's
RemoteAdapter, whose every call of the Adapter protocol (adapters.py) the child answers. This module is HW3's table:
what each call sends (a handle as its number; llm_init's pool as a window of memory the grader owns), the shape of
each answer (else "a reply the grader cannot read", the submission's failure), and what the grader reads of it (a
handle, a return value). The engine's objects are not read (unread.py: what they say is the submission's word).

The pool is memory the grader owns: a window of a memory file (pool_file.py) that the child maps and hands to
llm_init, and that the grader reads back itself (`observe`, answered here without asking the child), so what the
submission wrote into it is what the grader sees, whatever the child says. One child serves every adapter of a
grading run (as one imported module would); a failure that stops it (sys.exit, a BaseException, a fork, a hang, a
crash) is a failing step with its label, and the next adapter's first call starts a new one.

Every process of a submission, a graded run's or a second opinion's (alone.py's Witness), is handed a memory file
made for it when it starts (oracle/handed.py: PoolFile.renew, the one before closed), which pyserve.py holds at one
descriptor number (POOLS_FD): no process finds what an earlier one left in its pools' file, not even its size (a
file sealed against shrinking keeps the size its earlier windows gave it) or its number, so nothing there tells a
graded run's process from a second opinion's. A window dies with the process it was made for (the child's
generation).

No white-box probe runs on a Python submission (pyprobes.py: each reads the engine's objects, the submission's word).

    remote = served_engine(locate("student/llm_memory.py"), sandbox)
    remote.load()          # LoadFailure when it does not load
    adapter = remote()     # one per program, like any adapter factory
"""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.child import PythonTarget
from oracle.hw3.observation import UNREAD, ImplementationFailure, Observation
from oracle.hw3.pool import GUARD, GUARD_SIZE, initial_pool
from oracle.hw3.pool_file import PoolFile
from oracle.hw3.pyserve import POOLS_FD
from oracle.hw3.spec import API
from oracle.reply_shape import Int, OneOf
from oracle.sandbox import Sandbox
from oracle.served import RemoteAdapter, Served

SERVER = Path(__file__).with_name("pyserve.py")


@dataclass(frozen=True, slots=True)
class Handle:
    """An object the submission returned (an engine or a sequence), in one child process."""

    number: int
    generation: int

    def __repr__(self) -> str:
        return f"Handle({self.number})"


def _number(engine: Any, adapter: RemoteAdapter) -> int | None:
    if engine is None:
        return None
    if not isinstance(engine, Handle):
        raise TypeError(f"not a handle from this adapter: {engine!r}")
    if engine.generation != adapter.child.generation or not adapter.child.running:
        raise ImplementationFailure("this handle died with the process that made it (see the failing step before)")
    return engine.number


def _engine_call(args: tuple, adapter: RemoteAdapter) -> list:
    return [_number(args[0], adapter), *args[1:]]


def _init(args: tuple, adapter: RemoteAdapter) -> list:
    """llm_init(pool_size, null_pool=False) as it crosses: a fresh window of the pools' file the process now running
    was handed, holding the initial pool (None: a NULL pool); an adapter's first init forgets the handles and the
    pools of earlier adapters."""
    size, null_pool = args[0], args[1] if len(args) > 1 else False
    if size < 0:
        raise ValueError("pool_size is a size_t: it cannot be negative")
    adapter.begin()
    fresh, pools = not adapter.started, adapter.pools
    if fresh:
        pools.restart()  # the same process served an earlier adapter: its windows are done with
    offset = None if null_pool else pools.window(size, GUARD, initial_pool(size))
    adapter.window = None if offset is None else (adapter.child.generation, offset, GUARD_SIZE, size)
    return [size, GUARD_SIZE, POOLS_FD, offset, fresh]


def observe(adapter: RemoteAdapter, engine: Any) -> Observation:
    """The pool and its guards, read from the grader's own memory file; the engine's objects are not read (UNREAD
    while the handle is live: their state is the submission's word, unread.py)."""
    if adapter.window is None or not adapter.started:
        return Observation(engine=None, pool=None)
    generation, offset, guard, size = adapter.window
    if generation != adapter.child.generation or adapter.pools.fd < 0:  # a new process was handed a new file
        raise ImplementationFailure("this pool died with the process that had it (see the failing step before)")
    region = adapter.pools.read(offset, 2 * guard + size)  # the grader's own memory, read here
    return Observation(engine=None if engine is None else UNREAD, pool=region[guard : guard + size],
                       guard_before=region[:guard], guard_after=region[guard + size :])


def _handle(answer: int | None, adapter: RemoteAdapter) -> Handle | None:
    return None if answer is None else Handle(answer, adapter.child.generation)


def _returned(answer: Any, _: RemoteAdapter) -> int | bool | str:
    return answer[:200] if type(answer) is str else answer  # anything but an int or a bool is its text


HANDLE = OneOf(Int(1), None)  # a handle the child gave an object the submission returned, or NULL
REPLIES = {api: HANDLE if api in API[:3] else OneOf(Int(), bool, str) for api in API}
READ = {api: _handle if api in API[:3] else _returned for api in API}
WRITE = {api: _init if api == "llm_init" else _engine_call for api in API}


def served_engine(target: PythonTarget, sandbox: Sandbox, *, timeout: float = 2.0, **options: Any) -> Served:
    """One child process serving a Python submission, handed a pools' file of its own at each start; calling it
    makes an adapter. Closing it leaves the pools' file open: `served_engine(...).facts["pools"].close()`."""
    pools = PoolFile()  # the memory file of the process running or last run, new for each process
    facts = {"name": target.spec, "pools": pools, "window": None}  # window: the last init's pool (None: NULL)
    return Served(target, sandbox, server=SERVER, failure=ImplementationFailure, renew=None, replies=REPLIES,
                  timeout=timeout, methods=API, read=READ, facts=facts, write=WRITE, local={"observe": observe},
                  handed=(pools,), **options)


@contextmanager
def served(spec: str, *, sandbox: Sandbox | None = None, timeout: float = 2.0, **options: Any) -> Iterator[Served]:
    """The Python submission `spec` (pkg.module[:attr] or a .py file) loaded in its child process for the
    `with` block, in `sandbox` or one of its own; ValueError when there is no such file, LoadFailure when it
    does not load. Everything it started is gone when the block ends."""
    from oracle.pylocate import locate

    target = locate(spec)
    with ExitStack() as cleanup:
        if sandbox is None:
            sandbox = cleanup.enter_context(Sandbox())
        remote = served_engine(target, sandbox, timeout=timeout, **options)
        cleanup.callback(remote.facts["pools"].close)
        cleanup.callback(remote.close)
        remote.load()
        yield remote
