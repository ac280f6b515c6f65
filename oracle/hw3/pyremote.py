"""RemotePythonAdapter: the Adapter protocol for a Python submission that runs in a child process.

The submission never runs in the grader: pyserve.py loads it in the sandbox (oracle/child.py) and answers each
call with what it returned, which the grader compares with the model as it does for any adapter; the
engine's objects are not read (unread.py: what they say is the submission's word). The pool is memory the grader owns: a window of a memory file
(pool_file.py) that the child maps and hands to llm_init, and that the grader reads back itself, so what the
submission wrote into it is what the grader sees, whatever the child says. One child serves every adapter of
a grading run (as one imported module would); a failure that stops it (sys.exit, a BaseException, a fork, a
hang, a crash) is a failing step with its label, and the next adapter's first call starts a new one.

Every process of a submission, a graded run's or a second opinion's (alone.py's Witness), is handed a memory
file made for it when it starts (oracle/handed.py: PoolFile.renew, the one before closed), which pyserve.py holds
at one descriptor number (POOLS_FD): no process finds what an earlier one left in its pools' file, not even its
size (a file sealed against shrinking keeps the size its earlier windows gave it) or its number, so nothing there
tells a graded run's process from a second opinion's. A window dies with the process it was made for (the
child's generation).

No white-box probe runs on a Python submission (pyprobes.py: each reads the engine's objects, the submission's
word), so this adapter has none of probe_target.ProbeTarget's lower-level calls; a probe that rests only on what
the grader observes itself would need them first.
"""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.hw3.observation import UNREAD, ImplementationFailure, Observation
from oracle.hw3.pool import GUARD, GUARD_SIZE, initial_pool
from oracle.hw3.pool_file import PoolFile
from oracle.child import PythonChild, PythonTarget
from oracle.hw3.pyreply import BadReply, handle, returned
from oracle.hw3.pyserve import POOLS_FD
from oracle.hw3.spec import API
from oracle.sandbox import Sandbox

POINTER_CALLS = API[:3]
SERVER = Path(__file__).with_name("pyserve.py")


@dataclass(frozen=True, slots=True)
class Handle:
    """An object the submission returned (an engine or a sequence), in one child process."""

    number: int
    generation: int

    def __repr__(self) -> str:
        return f"Handle({self.number})"


class RemotePythonAdapter:
    """The Adapter protocol (adapters.py) over the child of `remote`, its pools windows of the memory file that
    child's process was handed. `output` is what the submission printed while this adapter was in use;
    `timeout` (None: the child's) bounds each call."""

    def __init__(self, remote: "RemotePython", timeout: float | None = None):
        self.remote = remote
        self.child = child = remote.child
        self.name = child.target.spec
        self.timeout = timeout
        self._fresh = True  # the next init forgets the handles and the pools of earlier adapters
        self._mark: tuple[int, int] | None = None  # (generation, output offset) when this adapter first called
        self._window: tuple[int, int, int, int] | None = None  # the last init's pool: (the child's generation,
        # offset, guard, size); None: NULL
        self.entered: str | None = None  # the API call a probe entered last

    # ---- plumbing ----

    def _ask(self, request: dict[str, Any], doing: str) -> dict[str, Any]:
        self._started()
        return self.child.ask(request, doing, self.timeout)

    def _started(self) -> None:
        """The child running (started now if it is not, or the family's failure saying why it does not load)."""
        child = self.child
        if not child.running:
            child.ask({"op": "reset"}, "while starting")
        if self._mark is None:
            self._mark = (child.generation, child.mark())

    def _bad(self, bad: BadReply) -> ImplementationFailure:
        self.child.stop()
        return ImplementationFailure(f"sent a reply the grader cannot read ({bad})")

    def _number(self, obj: Any) -> int | None:
        if obj is None:
            return None
        if not isinstance(obj, Handle):
            raise TypeError(f"not a handle from this adapter: {obj!r}")
        if obj.generation != self.child.generation or not self.child.running:
            raise ImplementationFailure("this handle died with the process that made it (see the failing step before)")
        return obj.number

    def _handle(self, value: Any) -> Handle | None:
        number = handle(value)
        return None if number is None else Handle(number, self.child.generation)

    # ---- the Adapter protocol ----

    def llm_init(self, pool_size: int, null_pool: bool = False) -> Handle | None:
        if pool_size < 0:
            raise ValueError("pool_size is a size_t: it cannot be negative")
        request = self._init_request(pool_size, None if null_pool else initial_pool(pool_size), None)
        reply = self._reply(request, "in llm_init")
        return self._parsed(lambda r: self._handle(r.get("ret")), reply)

    def _invoke(self, api: str, engine: Any, args: tuple[int, ...]) -> Any:
        request: dict[str, Any] = {"op": "call", "api": api, "engine": self._number(engine), "args": list(args)}
        reply = self._reply(request, f"in {api}")
        return self._parsed(lambda r: self._returned(api, r.get("ret")), reply)

    def _returned(self, api: str, value: Any) -> Any:
        return self._handle(value) if api in POINTER_CALLS else returned(value)

    def create_sequence(self, engine: Any, seq_id: int, initial_kv_len: int) -> Handle | None:
        return self._invoke("create_sequence", engine, (seq_id, initial_kv_len))

    def fork_sequence(self, engine: Any, parent_seq_id: int, new_seq_id: int) -> Handle | None:
        return self._invoke("fork_sequence", engine, (parent_seq_id, new_seq_id))

    def append_kv(self, engine: Any, seq_id: int, kv_data: int) -> Any:
        return self._invoke("append_kv", engine, (seq_id, kv_data))

    def free_sequence(self, engine: Any, seq_id: int) -> Any:
        return self._invoke("free_sequence", engine, (seq_id,))

    def llm_destroy(self, engine: Any) -> Any:
        return self._invoke("llm_destroy", engine, ())

    def observe(self, engine: Any) -> Observation:
        """The pool and its guards, read from the grader's own memory file; the engine's objects are not read
        (UNREAD while the handle is live: their state is the submission's word, unread.py)."""
        if self._window is None:
            return Observation(engine=None, pool=None)
        generation, offset, guard, size = self._window
        pools = self.remote.pools
        if generation != self.child.generation or pools.fd < 0:  # a new process was handed a new file, or none is
            raise ImplementationFailure("this pool died with the process that had it (see the failing step before)")
        region = pools.read(offset, 2 * guard + size)  # the grader's own memory, read here
        return Observation(
            engine=None if engine is None else UNREAD,
            pool=region[guard : guard + size],
            guard_before=region[:guard],
            guard_after=region[guard + size :],
        )

    @property
    def output(self) -> str:
        """What the submission printed since this adapter's first call (in the process that made it)."""
        if self._mark is None:
            return ""
        generation, since = self._mark
        return self.child.output(since if generation == self.child.generation else 0)

    def close(self) -> None:
        self._window = None

    def end_process(self) -> None:
        """Ends the process this adapter's calls run in (its handles die with it): the next call starts a fresh one,
        handed a pools' file of its own, where nothing an earlier process did is left (alone.py)."""
        self.child.stop()
        self._fresh, self._mark, self._window = True, None, None

    def _init_request(self, size: int, image: bytes | None, pattern: bytes | None) -> dict[str, Any]:
        """An init request on a fresh window holding `image` or `pattern` repeated (both None: a NULL pool), in the
        pools' file of the process it goes to (started first if it is not running)."""
        self._started()
        pools = self.remote.pools  # the one the process now running was handed
        if self._fresh:
            pools.restart()  # the same process served an earlier adapter: its windows are done with
        offset = None
        if image is not None or pattern is not None:
            offset = pools.window(size, GUARD, image, pattern)
        self._window = None if offset is None else (self.child.generation, offset, GUARD_SIZE, size)
        request = {"op": "init", "size": size, "guard": GUARD_SIZE, "memory": POOLS_FD, "offset": offset,
                   "reset": self._fresh}
        self._fresh = False
        return request

    def _reply(self, request: dict[str, Any], doing: str) -> dict[str, Any]:
        return self._ask(request, doing)

    def _parsed(self, parse: Any, reply: dict[str, Any]) -> Any:
        """parse(reply); a reply that is not the protocol's stops the child and fails the step."""
        try:
            return parse(reply)
        except BadReply as bad:
            raise self._bad(bad) from None


class RemotePython:
    """A Python submission served by one child process: calling it makes an adapter (the Adapter factory a
    Submission holds); `load()` starts the child and raises LoadFailure when the submission does not load;
    `close()` stops it and everything it started."""

    def __init__(self, target: PythonTarget, sandbox: Sandbox, *, timeout: float = 2.0, **options: Any):
        self._made = (target, sandbox, timeout, options)
        self.pools = PoolFile()  # the memory file of the process running or last run, new for each process
        self.child = PythonChild(target, sandbox, server=SERVER, failure=ImplementationFailure, timeout=timeout,
                                 handed=(self.pools,), **options)

    def load(self) -> None:
        self.child.start()

    def __call__(self, timeout: float | None = None) -> RemotePythonAdapter:
        return RemotePythonAdapter(self, timeout)

    def close(self) -> None:
        self.child.close()
        self.pools.close()


@contextmanager
def served(spec: str, *, sandbox: Sandbox | None = None, timeout: float = 2.0, **options: Any) -> Iterator[RemotePython]:
    """The Python submission `spec` (pkg.module[:attr] or a .py file) loaded in its child process for the
    `with` block, in `sandbox` or one of its own; ValueError when there is no such file, LoadFailure when it
    does not load. Everything it started is gone when the block ends."""
    from oracle.pylocate import locate

    target = locate(spec)
    with ExitStack() as cleanup:
        if sandbox is None:
            sandbox = cleanup.enter_context(Sandbox())
        remote = RemotePython(target, sandbox, timeout=timeout, **options)
        cleanup.callback(remote.close)
        remote.load()
        yield remote
