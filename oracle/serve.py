"""The child side of grading a Python submission, for every family: the frames, loading the submission, and
the loop that answers the grader's requests. A family's server (its serve module) subclasses Server with its
table of operations.

It runs in the sandbox under the system Python (`python3 -I -B`), staged with the family's server by
oracle/child.py: it imports the standard library only.

Frames both ways: length:u32 (little-endian), then that many bytes of UTF-8 JSON, never pickle. The first
reply comes unasked: {"loaded": true} or {"load_error": reason}. Then one reply per request: {"ret": value, ...}
or {"failure": label, "fatal": bool}; after a fatal one the server exits. Only the process that started the
server replies: a fork's copy exits at once.
"""

import importlib
import importlib.util
import json
import os
import struct
import sys
from typing import Callable

MAX_TEXT = 500  # characters of a message the submission's objects word (str of an exception, a repr)
_LENGTH = struct.Struct("<I")


class Fatal(Exception):
    """The submission ended what the server does (sys.exit, a BaseException, a fork): the last reply."""


def text(value: object, limit: int = MAX_TEXT) -> str:
    """str(value), cut at `limit` characters; a __str__ of the submission's that fails is not followed."""
    try:
        said = str(value)
    except BaseException:  # a __str__ of the submission's that raises or exits
        said = f"<{type(value).__name__}>"
    return said if len(said) <= limit else said[:limit] + "..."


def _read(fd: int, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def receive(fd: int) -> dict | None:
    """The next request, or None when the grader closed the pipe."""
    head = _read(fd, _LENGTH.size)
    if head is None:
        return None
    body = _read(fd, _LENGTH.unpack(head)[0])
    return None if body is None else json.loads(body)


def write(fd: int, body: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


def unstage(folder: str) -> None:  # pragma: no cover  (in the child)
    """Takes the folder the server was staged in off sys.path and forgets the modules imported from it (the
    server keeps using them), so a submission that has an `oracle` package of its own imports that one."""
    sys.path.remove(folder)
    for name in [name for name in sys.modules if name == "oracle" or name.startswith("oracle.")]:
        del sys.modules[name]


def load(root: str, module: str, attr: str) -> object:
    """The submission: `module` imported with `root` first on sys.path, or root/module when it is a .py file;
    the site folder the grader gave it (oracle/site.py: $PAGEDCHECK_SITE), if any, last."""
    sys.path.insert(0, root)
    if os.environ.get("PAGEDCHECK_SITE"):
        sys.path.append(os.environ["PAGEDCHECK_SITE"])
    if module.endswith(".py"):
        name = module[:-3]
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, module))
        target = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = target
        spec.loader.exec_module(target)  # type: ignore[union-attr]
    else:
        target = importlib.import_module(module)
    return getattr(target, attr) if attr else target


def load_error(exc: BaseException) -> str:
    """Why the submission did not load, in one line."""
    if isinstance(exc, SyntaxError):
        where = f" ({os.path.basename(exc.filename or '?')}, line {exc.lineno})"
        return f"SyntaxError: {text(exc.msg)}{where}"
    if isinstance(exc, SystemExit):
        return f"called sys.exit({text(repr(exc.code), 80) if exc.code is not None else ''}) while loading"
    said = text(exc)
    return f"{type(exc).__name__}{': ' + said if said else ''}"


class AdapterFailure(Exception):
    """The implementation a served adapter drives raised, or its state could not be read; the message says which."""


def call(what: str, function: Callable, *args: object) -> object:
    """`function(*args)`; an exception it raises is an AdapterFailure worded `WHAT raised KIND: TEXT`."""
    try:
        return function(*args)
    except Exception as exc:  # the implementation's bug, reported as a failing step
        raise AdapterFailure(f"{what} raised {type(exc).__name__}: {text(exc)}") from None


class Server:
    """Answers requests one by one until the grader closes the pipe. A family's server defines `handle`;
    `labelled` names the exceptions whose text is the whole label of a failing step; `during` words where a
    BaseException (not an Exception) came from, which ends the server."""

    labelled: tuple[type[BaseException], ...] = ()

    def __init__(self, replies: int):
        self.replies = replies
        self.pid = os.getpid()
        self.forked = False  # the submission started a process (the copy exits at once)

    def handle(self, request: dict) -> dict:  # pragma: no cover  (each family's server defines it)
        raise NotImplementedError

    def during(self, request: dict) -> str:
        return ""

    def serve(self, requests: int) -> None:
        while (request := receive(requests)) is not None:
            try:
                reply = self.handle(request)
            except Fatal as fatal:
                reply = {"failure": str(fatal), "fatal": True}
            except self.labelled as failure:
                reply = {"failure": text(failure), "fatal": False}
            except Exception as exc:  # the submission's bug, reported as a failing step
                reply = {"failure": f"raised {type(exc).__name__}: {text(exc)}", "fatal": False}
            except BaseException as exc:  # sys.exit and the like, from the submission's code or objects
                reply = {"failure": f"raised {type(exc).__name__}: {text(exc)}{self.during(request)}", "fatal": True}
            self.send(reply)
            if reply.get("fatal"):  # pragma: no cover  (the server's last reply, in the child)
                os._exit(0)

    def send(self, reply: dict) -> None:
        if os.getpid() != self.pid:  # pragma: no cover  (a fork's copy, in the child)
            os._exit(0)  # a fork's copy never replies
        try:
            body = json.dumps(reply, separators=(",", ":"), default=text).encode()
        except (ValueError, RecursionError) as exc:
            body = json.dumps({"failure": f"state unreadable: {text(exc)}", "fatal": False}).encode()
        write(self.replies, body)

    def watch_forks(self) -> None:  # pragma: no cover  (in the child: the handlers stay for the process's life)
        """A process the submission forks exits at once; the server notes that one was started."""
        os.register_at_fork(after_in_child=self._forked_child, after_in_parent=self._forked_parent)

    def _forked_child(self) -> None:  # pragma: no cover  (a fork's copy, in the child)
        os._exit(0)

    def _forked_parent(self) -> None:
        self.forked = True


def run(server: Server, requests: int, loading: Callable[[], object]) -> None:  # pragma: no cover  (in the child)
    """Loads the submission with `loading` (its failure is the first reply: Fatal's text, or why it raised),
    then serves the grader until it closes the pipe, and exits."""
    try:
        loading()
    except Fatal as fatal:
        server.send({"load_error": str(fatal)})
        os._exit(0)
    except BaseException as exc:
        server.send({"load_error": load_error(exc)})
        os._exit(0)
    server.send({"loaded": True})
    server.serve(requests)
    os._exit(0)


class AdapterServer(Server):
    """Serves a family's adapter whole (oracle/served.py): {"op": "new"} makes `adapter(submission)` (the first
    of `loaded`), {"op": "call", "method": m, "args": [...]} calls one of `methods` on it; `failure` is the
    adapter's failure, whose text is the whole label of a failing step."""

    def __init__(self, replies: int, adapter: Callable[[object], object], methods: tuple[str, ...],
                 failure: type[BaseException], loaded: list[object], lasting: bool = False):
        super().__init__(replies)
        self.adapter, self.methods, self.labelled, self.loaded = adapter, methods, (failure,), loaded
        self.lasting = lasting  # one adapter for the process's life, made at its first call (no "new")
        self.current: object = None

    def handle(self, request: dict) -> dict:
        if request.get("op") == "new" or (self.lasting and self.current is None):
            self.current = self.adapter(self.loaded[0])
            if request.get("op") == "new":
                return {"ret": None}
        method, args = request.get("method"), request.get("args")
        if request.get("op") != "call" or method not in self.methods or self.current is None or type(args) is not list:
            raise Fatal("the grader sent a request the server does not know")
        return {"ret": getattr(self.current, method)(*args)}


def serve_adapter(argv: list[str], adapter: Callable[[object], object], methods: tuple[str, ...],
                  failure: type[BaseException] = AdapterFailure, default_attr: str = "",
                  ready: Callable[[object], object] = lambda submission: None,
                  lasting: bool = False) -> None:  # pragma: no cover
    """A family's server whose adapter runs here whole (oracle/served.py, AdapterServer): argv is REQUESTS_FD
    REPLIES_FD ROOT MODULE [ATTR] (then the family's own arguments). `ready(submission)` checks it once loaded
    (what it raises is why it did not load); `lasting`: one adapter serves the process's life. The staged folder
    (which holds this file's oracle/) leaves sys.path first (`unstage`)."""
    unstage(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    loaded: list[object] = []
    server = AdapterServer(int(argv[2]), adapter, methods, failure, loaded, lasting)
    server.watch_forks()
    run(server, int(argv[1]), lambda: ready(loaded.append(load(argv[3], argv[4], argv[5] if len(argv) > 5 else
                                                                   default_attr)) or loaded[0]))
