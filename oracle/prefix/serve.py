"""The child side of grading a prefix-family submission: loads it and serves the grader's adapter calls.

Run in the sandbox (oracle/child.py starts it) as

    /usr/bin/python3 -I -B serve.py REQUESTS_FD REPLIES_FD ROOT MODULE ATTR SUPPORT ADAPTER POLICY_JSON

MODULE is a dotted name, or the name of a .py file in ROOT; SUPPORT is a folder holding a copy of the
family's adapters (oracle/prefix/adapters and the few modules they import, nothing else of pagedcheck) and of
oracle/serve.py, whose frames, loading and loop this server shares; ADAPTER is `module:Class` there. The
adapter runs here, beside the submission, and only its answers cross: the grader never imports the
submission. Standard library only, besides SUPPORT.

The first reply comes unasked: {"loaded": true} or {"load_error": reason}. Then one reply per request:

    {"op": "new"}                                   a fresh adapter (the last one is dropped)
    {"op": "call", "method": name, "args": [...]}   the adapter's method: start, admit, lookup, append,
                                                    commit, fork, copy, free, reset, observe, close

A reply is {"ret": value} (an Observation as an object of lists) or {"failure": label, "fatal": bool};
after a fatal one the server exits. A process the submission forks exits at once.
"""

import importlib
import json
import sys

if __name__ == "__main__":  # pragma: no cover  (in the child: SUPPORT, argv[6], holds oracle/)
    sys.path.insert(0, sys.argv[6])

from oracle import serve  # noqa: E402 (standard library only)
from oracle.serve import load, text  # noqa: E402

METHODS = ("start", "admit", "lookup", "append", "commit", "fork", "copy", "free", "reset", "observe", "close")


def observation(seen: object) -> dict:
    """An Observation as JSON: dicts as lists of pairs (ids stay ints), hash values as their text."""

    def pairs(mapping: object, value=lambda v: v) -> list | None:
        return None if mapping is None else [[key, value(v)] for key, v in mapping.items()]  # type: ignore[attr-defined]

    return {
        "tables": pairs(seen.tables, list),  # type: ignore[attr-defined]
        "free": None if seen.free is None else list(seen.free),  # type: ignore[attr-defined]
        "ref_counts": pairs(seen.ref_counts),  # type: ignore[attr-defined]
        "hashes": pairs(seen.hashes, lambda v: text(repr(v), 200)),  # type: ignore[attr-defined]
        "indexed": None if seen.indexed is None else list(seen.indexed),  # type: ignore[attr-defined]
        "lengths": pairs(getattr(seen, "lengths", None)),
    }


class Server(serve.Server):
    def __init__(self, replies: int, adapter: type, target: object, spec: str, policy: object, failure: type):
        super().__init__(replies)
        self.serving(adapter, target, spec, policy, failure)
        self.adapter: object = None

    def serving(self, adapter: type, target: object, spec: str, policy: object, failure: type) -> None:
        """The shape's adapter class, the submission it adapts and the policy; `failure` is the adapters'
        ImplementationFailure, whose text is the whole label of a failing step."""
        self.adapter_class, self.target, self.spec, self.policy = adapter, target, spec, policy
        self.labelled = (failure,)

    def op_new(self) -> dict:
        self.adapter = self.adapter_class(self.target, self.spec, self.policy)
        return {"ret": None}

    def op_call(self, method: str, args: list) -> dict:
        if method not in METHODS or self.adapter is None:
            raise serve.Fatal("the grader sent a request the server does not know")
        result = getattr(self.adapter, method)(*args)
        return {"ret": observation(result) if method == "observe" else result}

    def handle(self, request: dict) -> dict:
        op = OPS.get(request.get("op"))  # type: ignore[arg-type]
        if op is None:
            raise serve.Fatal("the grader sent a request the server does not know")
        if op is Server.op_new:
            return op(self)
        return op(self, request.get("method"), request.get("args", []))


OPS = {"new": Server.op_new, "call": Server.op_call}


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox, where
    # coverage is not installed; tests/test_prefix_grade.py runs it for real)
    requests, replies, root, module, attr, support, adapter, policy = argv[1:9]
    server = Server(int(replies), object, None, "", None, Exception)
    server.watch_forks()

    def loading() -> None:
        adapter_module, _, adapter_class = adapter.partition(":")
        adapters = importlib.import_module(adapter_module)
        from oracle.prefix.observation import ImplementationFailure
        from oracle.prefix.policy import Policy

        chosen = Policy(**json.loads(policy))
        target = load(root, module, attr)
        spec = f"{module}{':' + attr if attr else ''}"
        server.serving(getattr(adapters, adapter_class), target, spec, chosen, ImplementationFailure)
        server.adapter_class(target, spec, chosen)  # the shape's calls are there (ValueError otherwise)

    serve.run(server, int(requests), loading)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
