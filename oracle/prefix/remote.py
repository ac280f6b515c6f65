"""A prefix-family submission graded from outside: its module and the shape's adapter run in a sandboxed
child (oracle/prefix/serve.py over oracle/child.py's process and pipes), and the grader holds an
adapter with the same methods that asks the child for each call. JSON only; the grader never imports the
submission.

    remote = RemotePrefix(locate("student/kv_cache.py"), LabAdapter, LAB, sandbox)
    remote.load()                  # LoadFailure when it does not load
    adapter = remote()             # one per machine run, like any adapter factory
"""

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from oracle.child import PythonChild, PythonTarget
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import Policy
from oracle.sandbox import Sandbox

SERVER = Path(__file__).with_name("serve.py")
ORACLE = Path(__file__).resolve().parents[1]
# what the adapters import, copied for the child (whose packages are empty: nothing else of pagedcheck)
SUPPORT = ("target.py", "serve.py", "prefix/observation.py", "prefix/policy.py", "prefix/adapters/__init__.py",
           "prefix/adapters/lab.py", "prefix/adapters/minivllm.py", "prefix/adapters/nanovllm.py",
           "prefix/adapters/yaie.py")


def support_area(sandbox: Sandbox) -> Path:
    """A read-only folder holding `oracle/` with the adapters and what they import, for the child."""
    area = sandbox.area("prefix-support")
    for name in SUPPORT:
        (area / "oracle" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ORACLE / name, area / "oracle" / name)
    for package in ("", "prefix"):
        (area / "oracle" / package / "__init__.py").touch()
    for path in [area, *area.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return area


class RemoteAdapter:
    """The adapter protocol (oracle/prefix/adapters/__init__.py), each call answered by the child."""

    def __init__(self, child: PythonChild, adapter: type, policy: Policy):
        self.child, self.policy = child, policy
        self.shape, self.supports = adapter.shape, adapter.supports
        self.started = False

    def _ask(self, request: dict[str, Any], doing: str) -> Any:
        return self.child.ask(request, doing).get("ret")

    def _call(self, method: str, *args: Any) -> Any:
        return self._ask({"op": "call", "method": method, "args": list(args)}, f"in {method}")

    def start(self, num_blocks: int, block_size: int) -> None:
        self._ask({"op": "new"}, "while starting")
        self.started = True
        self._call("start", num_blocks, block_size)

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        accepted, hits = _checked(self._call("admit", rid, tokens), list, "admit")
        return bool(accepted), hits

    def lookup(self, tokens: list[int]) -> list[int]:
        return _checked(self._call("lookup", tokens), list, "get_computed_blocks")

    def append(self, rid: int, token: int) -> bool:
        return bool(self._call("append", rid, token))

    def commit(self, rid: int) -> None:
        self._call("commit", rid)

    def fork(self, rid: int, position: int) -> int | None:
        return self._call("fork", rid, position)

    def copy(self, src: int, dst: int, mismatched: bool) -> bool:
        return self._call("copy", src, dst, mismatched)

    def free(self, rid: int) -> None:
        self._call("free", rid)

    def reset(self) -> bool:
        return bool(self._call("reset"))

    def observe(self) -> Observation:
        seen = _checked(self._call("observe"), dict, "observe")
        try:
            return Observation(
                tables={rid: tuple(table) for rid, table in seen["tables"]},
                free=None if seen["free"] is None else tuple(seen["free"]),
                ref_counts=None if seen["ref_counts"] is None else dict(seen["ref_counts"]),
                hashes=None if seen["hashes"] is None else dict(seen["hashes"]),
                indexed=None if seen["indexed"] is None else tuple(seen["indexed"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from None

    def close(self) -> None:
        if self.started and self.child.running:
            try:
                self._call("close")
            except ImplementationFailure:
                pass
        self.started = False


def _checked(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise ImplementationFailure(f"{what}: the child sent {type(value).__name__}, not {kind.__name__}")
    return value


class RemotePrefix:
    """One child process serving a submission through a shape's adapter; calling it makes an adapter."""

    def __init__(self, target: PythonTarget, adapter: type, policy: Policy, sandbox: Sandbox, timeout: float = 2.0):
        self.adapter, self.policy = adapter, policy
        support = support_area(sandbox)
        options = (str(support), f"{adapter.__module__}:{adapter.__name__}", json.dumps(dataclasses.asdict(policy)))
        self.child = PythonChild(target, sandbox, server=SERVER, failure=ImplementationFailure, timeout=timeout,
                                 support=support, server_args=options)

    def load(self) -> None:
        self.child.start()

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child, self.adapter, self.policy)

    def close(self) -> None:
        self.child.close()
