"""The child side of grading a prefix-family submission: loads it and serves the grader's adapter calls.

Run in the sandbox (oracle/hw3/pychild.py starts it) as

    /usr/bin/python3 -I -B serve.py REQUESTS_FD REPLIES_FD ROOT MODULE ATTR SUPPORT ADAPTER POLICY_JSON

MODULE is a dotted name, or the name of a .py file in ROOT; SUPPORT is a folder holding a copy of the
family's adapters (oracle/prefix/adapters and the few modules they import, nothing else of pagedcheck);
ADAPTER is `module:Class` there. The adapter runs here, beside the submission, and only its answers cross:
the grader never imports the submission. Standard library only, besides SUPPORT (which also holds
oracle/hw3/pyserve.py, whose framing and loading this server shares).

Frames both ways: length:u32 (little-endian), then UTF-8 JSON, never pickle. The first reply comes unasked:
{"loaded": true} or {"load_error": reason}. Then one reply per request:

    {"op": "new"}                                   a fresh adapter (the last one is dropped)
    {"op": "call", "method": name, "args": [...]}   the adapter's method: start, admit, lookup, append,
                                                    commit, fork, copy, free, reset, observe, close

A reply is {"ret": value} (an Observation as an object of lists) or {"failure": label, "fatal": bool};
after a fatal one the server exits. A process the submission forks exits at once.
"""

import importlib
import json
import os
import sys

if __name__ == "__main__":  # pragma: no cover  (in the child: SUPPORT, argv[6], holds oracle/)
    sys.path.insert(0, sys.argv[6])

from oracle.hw3.pyserve import _load_error, _receive, _text, _write, load  # noqa: E402 (standard library only)

METHODS = ("start", "admit", "lookup", "append", "commit", "fork", "copy", "free", "reset", "observe", "close")


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
        _write(self.replies, body)


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox, where
    # coverage is not installed; tests/test_prefix_grade.py runs it for real)
    requests, replies, root, module, attr, support, adapter, policy = argv[1:9]
    server = Server(int(replies), object, None, "", None, Exception)
    os.register_at_fork(after_in_child=lambda: os._exit(0))
    try:
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
        server.send({"load_error": _load_error(exc)})
        os._exit(0)
    server.send({"loaded": True})
    server.serve(int(requests))
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
