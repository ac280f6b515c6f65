"""The child side of grading a Python submission: loads it and serves the grader's calls over two pipes.

Run in the sandbox as `/usr/bin/python3 -I -B pyserve.py REQUESTS_FD REPLIES_FD ROOT MODULE [ATTR]` (MODULE
a dotted name, or the name of a .py file in ROOT), staged beside oracle/serve.py by oracle/child.py, whose loop
(serve_adapter: the frames, loading, one reply per request) serves `Engines`, the submission's six calls, for the
process's whole life; the grader holds the core's remote adapter (oracle/served.py, the table in pyremote.py). It
imports the standard library and oracle/serve.py only (nothing else of pagedcheck is visible there); it reads none
of the submission's objects (engine_objects.py does, for an implementation in the grader's own process only).

Each request is {"op": "call", "method": one of API, "args": [...]}:

    llm_init(size, guard, memory, offset | null, reset)   llm_init gets the `size` bytes after the first `guard`
        of the window at `offset` of the memory file `memory` (guard+size+guard bytes, which the grader created,
        filled, and reads back itself: this server never sends the pool); null: a NULL pool; with `reset`, every
        handle is forgotten first. In grading `memory` is POOLS_FD: before the submission is loaded, the server
        moves there the one memory file of pools the grader passed (the descriptor sealed as
        oracle/hw3/pool_file.py seals it), so every process of a submission holds its own file at one number,
        whatever descriptors the grader had open when it started it
    create_sequence(engine, seq_id, n), fork_sequence(engine, parent, child), append_kv(engine, seq_id, value),
    free_sequence(engine, seq_id), llm_destroy(engine)     `engine` a handle or null

Objects the submission returns are handles: small ints, 0 never used. There is no call that reads or edits the
submission's objects: this server runs in the submission's interpreter, which the submission controls, so the
grader rests no verdict on what it would say of them (oracle/hw3/evidence.py).
Only the process that started the server replies: a fork's copy exits at once; a call that forked is fatal.
"""

import errno
import fcntl
import mmap
import operator
import os
import sys
from functools import partialmethod

STAGED = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if __name__ == "__main__":  # pragma: no cover  (in the child: oracle/serve.py is staged two folders up)
    sys.path.insert(0, STAGED)

from oracle import serve  # noqa: E402  (standard library only)
from oracle.serve import Fatal, text as _text  # noqa: E402

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")
POINTER_CALLS = ("llm_init", "create_sequence", "fork_sequence")
POOLS_FD = 3  # the pools' memory file, in every process of a submission
POOLS_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL  # pool_file.SEALS; this file cannot import oracle.hw3


class Engines:
    """The submission's six calls, each object it returns sent as a handle; its ways of not returning are failures."""

    def __init__(self, impl: object):
        self.impl = impl
        self.pid = os.getpid()
        self.handles: dict[int, object] = {}

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

    def llm_init(self, size: int, guard: int, memory: int, offset: int | None, reset: bool) -> int | None:
        if reset:
            self.handles.clear()
        pool = None
        if offset is not None:
            window = mmap.mmap(memory, 2 * guard + size, offset=offset)  # shared: the grader reads what is written
            pool = memoryview(window)[guard : guard + size]
        return self._run("llm_init", pool, size)

    def _call(self, api: str, engine: int | None, *args: object) -> object:
        return self._run(api, self._object(engine), *args)

    create_sequence = partialmethod(_call, "create_sequence")
    fork_sequence = partialmethod(_call, "fork_sequence")
    append_kv = partialmethod(_call, "append_kv")
    free_sequence = partialmethod(_call, "free_sequence")
    llm_destroy = partialmethod(_call, "llm_destroy")

    def _run(self, api: str, *args: object) -> object:
        """One of the submission's calls, its result as it crosses; its ways of not returning become failures."""
        try:
            result = getattr(self.impl, api)(*args)
            sent = self._handle(result) if api in POINTER_CALLS else _value(result)
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
        alone(self.pid, f"in {api}")
        return sent


_FORKED: list[bool] = []  # the submission started a process (watched in the child only: main)


def alone(pid: int, doing: str) -> None:
    """Fatal when the submission started a process (the fork's copy exits at once, never replying)."""
    if os.getpid() != pid:  # pragma: no cover  (a fork's copy, in the child)
        os._exit(0)
    try:
        children = os.waitpid(-1, os.WNOHANG) is not None
    except ChildProcessError:
        children = False
    if children or _FORKED:
        raise Fatal(f"started a child process (fork) {doing}")


def _value(result: object) -> object:
    """A return value as JSON: a bool as it is, an int or anything that is one (operator.index: an IntEnum, a
    numpy integer) within 64 bits as that int, anything else as its text (which equals no expected value)."""
    if type(result) is bool:
        return result
    try:
        number = operator.index(result)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001  (not an integer, or an __index__ that raised)
        return _text(result, 200)
    return number if -(1 << 63) <= number < 1 << 63 else _text(result, 200)


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
    requests, replies = hold_pools(int(argv[1]), int(argv[2]))
    os.register_at_fork(after_in_parent=lambda: _FORKED.append(True))
    pid = os.getpid()

    def ready(impl: object) -> None:
        alone(pid, "while loading")
        missing = [name for name in API if not callable(getattr(impl, name, None))]
        if missing:
            raise Fatal(f"it does not define {', '.join(missing)}")

    serve.serve_adapter([argv[0], str(requests), str(replies), *argv[3:]], Engines, API, ready=ready, lasting=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
