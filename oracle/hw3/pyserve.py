"""The child side of grading a Python submission: loads it and serves the grader's calls over two pipes.

Run in the sandbox as `/usr/bin/python3 -I -B pyserve.py REQUESTS_FD REPLIES_FD ROOT MODULE [ATTR]` (MODULE
a dotted name, or the name of a .py file in ROOT), staged beside oracle/serve.py (the frames, the loading and
the loop every family's server shares) by oracle/child.py. It imports the standard library and oracle/serve.py
only (nothing else of pagedcheck is visible there); the grader also imports it, for `read_engine`, the one
definition of how a Python implementation's objects are read white-box.

The first reply comes unasked: {"loaded": true} or {"load_error": reason}. Then one reply per request (the
table OPS names each op's method):

    {"op": "init", "size": n, "guard": g, "memory": fd, "offset": o | null, "reset": bool}  llm_init gets the
        n bytes after the first g of the window at `o` of the memory file `fd` (g+n+g bytes, which the grader
        created, filled, and reads back itself: this server never sends the pool); null: a NULL pool; with
        "reset", every handle is forgotten first. In grading `fd` is POOLS_FD: before the submission is
        loaded, the server moves there the one memory file of pools the grader passed (the descriptor sealed
        as oracle/hw3/pool_file.py seals it), so every process of a submission holds its own file at one
        number, whatever descriptors the grader had open when it started it
    {"op": "call", "api": name, "engine": h | null, "args": [int, ...]}
    {"op": "calls", "api": name, "engine": h | null, "args": [[int, ...], ...], "stop": "null" | "nonzero"}
        the call once per argument list, one reply each, up to the first that returns NULL / not 0
    {"op": "observe", "engine": h | null}       "state" (see read_engine) or "state_error" of the engine
                                                (none for null)
    {"op": "counts", "engine": h, "limit": n | null}   counters, ref_count, whether the active list is
                                                empty, its length (up to limit; none for null)
    {"op": "sequence", "seq": h}                seq_id, kv_count, the whole block_table, each L2 table's id()
    {"op": "reset"}                             forgets every handle

An init or a call may carry "then": h | null | "new": its reply then also holds what observe of that engine
(of the one it returned, for "new") would say, saving a round trip.

A reply is {"ret": value, ...} or {"failure": label, "fatal": bool}; after a fatal one the server exits.
Objects the submission returns are handles: small ints, 0 never used.
There is no op that edits the submission's objects: this server runs in the submission's interpreter, which
the submission controls (it can replace OPS on import), so the grader rests no verdict on an edit made here
(oracle/hw3/evidence.py).
Only the process that started the server replies: a fork's copy exits at once; a call that forked is fatal.
"""

import array
import errno
import fcntl
import mmap
import operator
import os
import sys

STAGED = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if __name__ == "__main__":  # pragma: no cover  (in the child: oracle/serve.py is staged two folders up)
    sys.path.insert(0, STAGED)

from oracle import serve  # noqa: E402  (standard library only)
from oracle.serve import Fatal, load, text as _text  # noqa: E402

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")
POINTER_CALLS = ("llm_init", "create_sequence", "fork_sequence")
L1_SLOTS = 16  # L1_PT_SIZE; this file cannot import oracle.hw3.spec
UNMAPPED = -1
MAX_ITEMS = 1 << 21  # entries read from one list the submission owns (ref_count, an L2 table)
POOLS_FD = 3  # the pools' memory file, in every process of a submission
POOLS_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL  # pool_file.SEALS; this file cannot import oracle.hw3


class Unreadable(Exception):
    """A field the contract names is missing or has a shape the C structs cannot have."""


def _int(value: object, what: str) -> int:
    """An int the way the grader compares it: an int or anything that is one (operator.index)."""
    if type(value) is int or type(value) is bool:
        number = int(value)
    else:
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            raise Unreadable(f"{what} is {_text(repr(value), 80)}, not an integer") from None
    if not -(1 << 63) <= number < 1 << 63:
        raise Unreadable(f"{what} is {_text(number, 80)}, beyond 64 bits")
    return number


def _ints(values: object, what: object) -> list[int]:
    if type(values) in (list, tuple) and len(values) <= MAX_ITEMS:  # type: ignore[arg-type]
        try:
            return array.array("q", values).tolist()  # type: ignore[arg-type]
        except (TypeError, OverflowError):
            pass  # the loop below names the entry
    out = []
    for i, value in enumerate(values):  # type: ignore[call-overload]
        if i >= MAX_ITEMS:
            raise Unreadable(f"{what} has more than {MAX_ITEMS} entries")
        if type(value) is int and -(1 << 63) <= value < 1 << 63:
            out.append(value)
        else:
            out.append(_int(value, f"{what}[{i}]"))
    return out


def read_table(seq: object, slots: int | None = L1_SLOTS) -> list:
    """seq.block_table (its first `slots` entries, all when None): None or a list of ints per entry."""
    table = list(seq.block_table)[:slots] if slots is not None else list(seq.block_table)  # type: ignore[attr-defined]
    return [None if l2 is None else _ints(l2, _EntryName(seq, l1)) for l1, l2 in enumerate(table)]


class _EntryName:
    """`seq <id> block_table[<l1>]`, worded only when a message needs it (most reads need none)."""

    def __init__(self, seq: object, l1: int):
        self.seq, self.l1 = seq, l1

    def __str__(self) -> str:
        return f"seq {_text(getattr(self.seq, 'seq_id', '?'), 40)} block_table[{self.l1}]"


def read_engine(engine: object, owners: dict[int, object]) -> dict:
    """The engine's counters, ref_count and active list, read white-box with the C field names; `owners`
    maps id(node) to the sequence create or fork returned (container_of). Raises Unreadable, AttributeError
    or TypeError when the objects do not have the contract's shape.

    Checking prev at every node also ends every cycle: the first node met twice is met from a different
    node the second time, so its prev cannot match.
    """
    head = engine.active_seqs  # type: ignore[attr-defined]
    sequences: list = []
    list_error = None
    prev, node = head, head.next
    while node is not head:
        seq = owners.get(id(node))
        if node.prev is not prev:
            list_error = f"{_position(len(sequences), seq)}: prev does not point to the node before it"
            break
        if seq is None:
            list_error = f"{_position(len(sequences), seq)}: the node belongs to no sequence that create or fork returned"
            break
        sequences.append([_int(seq.seq_id, "seq_id"), _int(seq.kv_count, "kv_count"), read_table(seq)])  # type: ignore[attr-defined]
        prev, node = node, node.next
    else:
        if head.prev is not prev:
            list_error = "head.prev is not the last node"
    return {
        "total": _int(engine.total_local_blocks, "total_local_blocks"),  # type: ignore[attr-defined]
        "free": _int(engine.free_local_blocks, "free_local_blocks"),  # type: ignore[attr-defined]
        "ref_count": _ints(engine.ref_count, "ref_count"),  # type: ignore[attr-defined]
        "sequences": sequences,
        "list_error": list_error,
    }


def _position(index: int, seq: object) -> str:
    return f"position {index}" + (f" (seq {seq.seq_id})" if seq is not None else "")  # type: ignore[attr-defined]


def _list_length(head: object, limit: int) -> int:
    n, node = 0, head.next  # type: ignore[attr-defined]
    while node is not head and n <= limit:
        n, node = n + 1, node.next
    return n


class Server(serve.Server):
    def __init__(self, impl: object, replies: int):
        super().__init__(replies)
        self.impl = impl
        self.handles: dict[int, object] = {}
        self.owners: dict[int, object] = {}  # id(node) -> sequence

    # ---- handles ----

    def _handle(self, obj: object) -> int | None:
        if obj is None:
            return None
        number = len(self.handles) + 1
        self.handles[number] = obj
        return number

    def _object(self, handle: object) -> object:
        if handle is None:
            return None
        if type(handle) is not int or handle not in self.handles:
            raise ValueError(f"no such handle: {handle!r}")
        return self.handles[handle]

    # ---- running the submission's code ----

    def _run(self, api: str, *args: object) -> object:
        """One of the submission's calls; its ways of not returning become failures."""
        try:
            result = getattr(self.impl, api)(*args)
        except SystemExit as exc:
            raise Fatal(f"called sys.exit({_text(repr(exc.code), 80) if exc.code is not None else ''}) in {api}") from None
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                raise Fatal(f"wrote more output than allowed (File too large) in {api}") from None
            raise
        except Exception:
            raise
        except BaseException as exc:
            said = _text(exc)
            raise Fatal(f"raised {type(exc).__name__}{': ' + said if said else ''} in {api}") from None
        self._check_alone(f"in {api}")
        return result

    def _check_alone(self, doing: str) -> None:
        if os.getpid() != self.pid:  # pragma: no cover  (a fork's copy, in the child)
            os._exit(0)  # a fork's copy never replies
        try:
            children = os.waitpid(-1, os.WNOHANG) is not None
        except ChildProcessError:
            children = False
        if children or self.forked:
            raise Fatal(f"started a child process (fork) {doing}")

    def _state(self, engine: object) -> dict:
        try:
            return {"state": read_engine(engine, self.owners)}
        except Exception as exc:
            return {"state_error": _text(exc)}

    # ---- the ops ----

    def op_init(self, size: int, guard: int, memory: int, offset: int | None, reset: bool = False) -> dict:
        if reset:
            self.op_reset()
        pool = None
        if offset is not None:
            window = mmap.mmap(memory, 2 * guard + size, offset=offset)  # shared: the grader reads what is written
            pool = memoryview(window)[guard : guard + size]
        return {"ret": self._handle(self._run("llm_init", pool, size))}

    def op_call(self, api: str, engine: int | None, args: list) -> dict:
        if api not in API[1:]:
            raise ValueError(f"no such call: {api!r}")
        target = self._object(engine)
        result = self._run(api, target, *args)
        if api not in POINTER_CALLS:
            return {"ret": _value(result)}
        if result is not None:
            self.owners[id(getattr(result, "node", result))] = result
        return {"ret": self._handle(result)}

    def op_calls(self, api: str, engine: int | None, args: list, stop: str) -> dict:
        """The same call once per argument list, one reply each, up to the first that returns NULL
        (stop "null") or not 0 (stop "nonzero")."""
        reply: dict = {"ret": None}
        for i, one in enumerate(args):
            if i:
                self.send(reply)
            reply = self.op_call(api, engine, one)
            if (reply["ret"] is None) if stop == "null" else (reply["ret"] != 0):
                break
        return reply

    def op_observe(self, engine: int | None) -> dict:
        return {"ret": None, **self._observation(engine)}

    def _observation(self, engine: int | None) -> dict:
        return {} if engine is None else self._state(self._object(engine))

    def op_counts(self, engine: int, limit: int | None) -> dict:
        obj = self._object(engine)
        head = obj.active_seqs  # type: ignore[attr-defined]
        return {"ret": {
            "total": _int(obj.total_local_blocks, "total_local_blocks"),  # type: ignore[attr-defined]
            "free": _int(obj.free_local_blocks, "free_local_blocks"),  # type: ignore[attr-defined]
            "ref_count": _ints(obj.ref_count, "ref_count"),  # type: ignore[attr-defined]
            "length": None if limit is None else _list_length(head, limit),
            "empty": head.next is head and head.prev is head,
        }}

    def op_sequence(self, seq: int) -> dict:
        obj = self._object(seq)
        table = list(obj.block_table)  # type: ignore[attr-defined]
        return {"ret": {
            "seq_id": _int(obj.seq_id, "seq_id"),  # type: ignore[attr-defined]
            "kv_count": _int(obj.kv_count, "kv_count"),  # type: ignore[attr-defined]
            "table": read_table(obj, None),
            "l2_ids": [None if l2 is None else id(l2) for l2 in table],
        }}

    def op_reset(self) -> dict:
        self.handles.clear()
        self.owners.clear()
        return {"ret": None}

    def handle(self, request: dict) -> dict:
        op, then = OPS[request["op"]], request.get("then", False)
        reply = op(self, **{name: value for name, value in request.items() if name not in ("op", "then")})
        if then is not False:
            reply.update(self._observation(reply["ret"] if then == "new" else then))
        return reply

    def during(self, request: dict) -> str:
        return f" in {request['op']}"


OPS = {
    "init": Server.op_init, "call": Server.op_call, "calls": Server.op_calls, "observe": Server.op_observe,
    "counts": Server.op_counts, "sequence": Server.op_sequence, "reset": Server.op_reset,
}


def _value(result: object) -> object:
    """A return value as JSON: a bool as it is, an int or anything that is one (operator.index: an IntEnum, a
    numpy integer) as that int, anything else as its text (which equals no expected value)."""
    if type(result) is bool:
        return result
    try:
        return _int(result, "the return value")
    except Exception:  # noqa: BLE001  (not an integer, beyond 64 bits, or an __index__ that raised)
        return _text(result, 200)


def _sealed(fd: int) -> bool:
    """Whether `fd` is a memory file sealed as the grader seals its pools' file."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GET_SEALS) & POOLS_SEALS == POOLS_SEALS
    except OSError:  # not open, or not a file that takes seals (a pipe, /dev/null)
        return False


def hold_pools(requests: int, replies: int) -> tuple[int, int]:  # pragma: no cover  (in the child)
    """The pools' memory file the grader passed, moved to POOLS_FD (its own descriptor closed), before the
    submission is loaded; the request and reply pipes, moved off POOLS_FD first if one was there."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number a descriptor may have
        open_fds = list(range(min(os.sysconf("SC_OPEN_MAX"), 1 << 16)))
    passed = sorted(fd for fd in open_fds if fd > 2 and fd not in (requests, replies) and _sealed(fd))
    if requests == POOLS_FD:
        requests = os.dup(requests)
        os.close(POOLS_FD)
    if replies == POOLS_FD:
        replies = os.dup(replies)
        os.close(POOLS_FD)
    for fd in passed[:1]:
        if fd != POOLS_FD:
            os.dup2(fd, POOLS_FD)
            os.close(fd)
    return requests, replies


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox, where
    # coverage is not installed; tests/test_pyremote.py runs it for real)
    requests, replies, root, module = int(argv[1]), int(argv[2]), argv[3], argv[4]
    attr = argv[5] if len(argv) > 5 else ""
    requests, replies = hold_pools(requests, replies)
    serve.unstage(STAGED)  # the submission's own `oracle` (the built-in engine's spec.py) is imported as alone
    server = Server(None, replies)
    server.watch_forks()

    def loading() -> None:
        impl = load(root, module, attr)
        server._check_alone("while loading")
        missing = [name for name in API if not callable(getattr(impl, name, None))]
        if missing:
            raise Fatal(f"it does not define {', '.join(missing)}")
        server.impl = impl

    serve.run(server, requests, loading)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
