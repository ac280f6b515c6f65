"""The child side of grading a prefix-family submission: loads it and serves the grader's adapter calls, on the
core's server (oracle/serve.py, serve_adapter). Run in the sandbox (oracle/child.py starts it) as

    /usr/bin/python3 -I -B serve.py REQUESTS_FD REPLIES_FD ROOT MODULE ATTR SUPPORT ADAPTER POLICY_JSON

SUPPORT is a folder holding a copy of the family's adapters (oracle/prefix/adapters and the few modules they
import, nothing else of pagedcheck) and of oracle/serve.py; ADAPTER is the shape's adapter class there,
`module:Class`, made for the submission under the policy POLICY_JSON. The adapter runs here, beside the
submission, and only its answers cross (an Observation as an object of lists): the grader never imports the
submission. A submission without the shape's calls does not load. Standard library only, besides SUPPORT.
"""

import importlib
import json
import sys

if __name__ == "__main__":  # pragma: no cover  (in the child: SUPPORT, argv[6], holds oracle/)
    sys.path.insert(0, sys.argv[6])

from oracle.serve import serve_adapter, text  # noqa: E402 (standard library only)

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


class Served:
    """The shape's adapter as the grader's calls reach it: each method its own, `observe` as JSON."""

    def __init__(self, adapter: object):
        self.adapter = adapter

    def __getattr__(self, method: str) -> object:
        return getattr(self.adapter, method)

    def observe(self) -> dict:
        return observation(self.adapter.observe())  # type: ignore[attr-defined]


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox, where
    # coverage is not installed; tests/test_prefix_grade.py runs it for real)
    module, attr, adapter, policy = argv[4], argv[5], argv[7], argv[8]
    adapter_module, _, adapter_class = adapter.partition(":")
    shape = getattr(importlib.import_module(adapter_module), adapter_class)
    from oracle.prefix.observation import ImplementationFailure
    from oracle.prefix.policy import Policy

    chosen, spec = Policy(**json.loads(policy)), f"{module}{':' + attr if attr else ''}"
    # the shape's calls are there when it loads (ValueError otherwise)
    serve_adapter(argv, lambda target: Served(shape(target, spec, chosen)), METHODS, ImplementationFailure,
                  ready=lambda target: shape(target, spec, chosen))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
