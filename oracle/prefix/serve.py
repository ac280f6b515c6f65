"""The child side of grading a prefix-family submission: loads it and serves the grader's adapter calls.

Run in the sandbox (oracle/hw3/pychild.py starts it) as

    /usr/bin/python3 -I -B serve.py REQUESTS_FD REPLIES_FD ROOT MODULE ATTR SUPPORT ADAPTER POLICY_JSON

MODULE is a dotted name, or the name of a .py file in ROOT; SUPPORT is a folder holding a copy of the
family's adapters (oracle/prefix/adapters and the few modules they import, nothing else of pagedcheck);
ADAPTER is `module:Class` there. The adapter runs here, beside the submission, and only its answers cross:
the grader never imports the submission. Standard library only, besides SUPPORT.

Frames both ways: length:u32 (little-endian), then UTF-8 JSON, never pickle. The first reply comes unasked:
{"loaded": true} or {"load_error": reason}. Then one reply per request:

    {"op": "new"}                                   a fresh adapter (the last one is dropped)
    {"op": "call", "method": name, "args": [...]}   the adapter's method: start, admit, lookup, append,
                                                    commit, fork, free, reset, observe, close

A reply is {"ret": value} (an Observation as an object of lists) or {"failure": label, "fatal": bool};
after a fatal one the server exits. A process the submission forks exits at once.
"""

import importlib
import importlib.util
import json
import os
import struct
import sys

METHODS = ("start", "admit", "lookup", "append", "commit", "fork", "free", "reset", "observe", "close")
MAX_TEXT = 500
_LENGTH = struct.Struct("<I")


def _text(value: object, limit: int = MAX_TEXT) -> str:
    try:
        text = str(value)
    except BaseException:  # a __str__ of the submission's that raises or exits
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def observation(seen: object) -> dict:
    """An Observation as JSON: dicts as lists of pairs (ids stay ints), hash values as their text."""

    def pairs(mapping: object, value=lambda v: v) -> list | None:
        return None if mapping is None else [[key, value(v)] for key, v in mapping.items()]  # type: ignore[attr-defined]

    return {
        "tables": pairs(seen.tables, list),  # type: ignore[attr-defined]
        "free": None if seen.free is None else list(seen.free),  # type: ignore[attr-defined]
        "ref_counts": pairs(seen.ref_counts),  # type: ignore[attr-defined]
        "hashes": pairs(seen.hashes, lambda v: _text(repr(v), 200)),  # type: ignore[attr-defined]
        "indexed": None if seen.indexed is None else list(seen.indexed),  # type: ignore[attr-defined]
    }


class Server:
    def __init__(self, replies: int, adapter: type, target: object, spec: str, policy: object, failure: type):
        self.replies, self.pid = replies, os.getpid()
        self.adapter_class, self.target, self.spec, self.policy = adapter, target, spec, policy
        self.failure = failure  # the adapters' ImplementationFailure
        self.adapter: object = None

    def handle(self, request: dict) -> dict:
        if request.get("op") == "new":
            self.adapter = self.adapter_class(self.target, self.spec, self.policy)
            return {"ret": None}
        method = request.get("method")
        if request.get("op") != "call" or method not in METHODS or self.adapter is None:
            return {"failure": "the grader sent a request the server does not know", "fatal": True}
        result = getattr(self.adapter, method)(*request.get("args", []))
        return {"ret": observation(result) if method == "observe" else result}

    def serve(self, requests: int) -> None:
        while (request := _receive(requests)) is not None:
            try:
                reply = self.handle(request)
            except self.failure as failure:
                reply = {"failure": _text(failure), "fatal": False}
            except Exception as exc:  # the submission's bug, reported as a failing step
                reply = {"failure": f"raised {type(exc).__name__}: {_text(exc)}", "fatal": False}
            except BaseException as exc:  # sys.exit and the like, from the submission's code
                reply = {"failure": f"raised {type(exc).__name__}: {_text(exc)}", "fatal": True}
            self.send(reply)
            if reply.get("fatal"):  # pragma: no cover  (the server's last reply, in the child)
                os._exit(0)

    def send(self, reply: dict) -> None:
        if os.getpid() != self.pid:  # pragma: no cover  (a fork's copy, in the child)
            os._exit(0)
        try:
            body = json.dumps(reply, separators=(",", ":"), default=_text).encode()
        except (ValueError, RecursionError) as exc:
            body = json.dumps({"failure": f"state unreadable: {_text(exc)}", "fatal": False}).encode()
        view = memoryview(_LENGTH.pack(len(body)) + body)
        while view:
            view = view[os.write(self.replies, view) :]


def _read(fd: int, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _receive(fd: int) -> dict | None:
    head = _read(fd, _LENGTH.size)
    body = None if head is None else _read(fd, _LENGTH.unpack(head)[0])
    return None if body is None else json.loads(body)


def load(root: str, module: str, attr: str) -> object:
    """The submission: `module` imported with `root` on sys.path, or root/module when it is a .py file."""
    sys.path.insert(1, root)  # after SUPPORT: the adapters' own modules are ours
    if module.endswith(".py"):
        name = module[:-3]
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, module))
        target = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = target
        spec.loader.exec_module(target)  # type: ignore[union-attr]
    else:
        target = importlib.import_module(module)
    return getattr(target, attr) if attr else target


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox, where
    # coverage is not installed; tests/test_prefix_grade.py runs it for real)
    requests, replies, root, module, attr, support, adapter, policy = argv[1:9]
    server = Server(int(replies), object, None, "", None, Exception)
    os.register_at_fork(after_in_child=lambda: os._exit(0))
    try:
        sys.path.insert(0, support)
        adapter_module, _, adapter_class = adapter.partition(":")
        adapters = importlib.import_module(adapter_module)
        from oracle.prefix.observation import ImplementationFailure
        from oracle.prefix.policy import Policy

        chosen = Policy(**json.loads(policy))
        target = load(root, module, attr)
        spec = f"{module}{':' + attr if attr else ''}"
        server = Server(int(replies), getattr(adapters, adapter_class), target, spec, chosen, ImplementationFailure)
        server.adapter_class(target, spec, chosen)  # the shape's calls are there (ValueError otherwise)
    except BaseException as exc:
        said = _text(exc)
        server.send({"load_error": f"{type(exc).__name__}{': ' + said if said else ''}"})
        os._exit(0)
    server.send({"loaded": True})
    server.serve(int(requests))
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
