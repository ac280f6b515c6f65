"""A prefix-family submission graded from outside: its module and the shape's adapter run in a sandboxed
child (oracle/prefix/serve.py over oracle/child.py's process and pipes), and the grader holds an
adapter with the same methods that asks the child for each call. JSON only, decoded by oracle/reply.py and
then checked for the shape each method's answer has (a reply of another shape is the submission's failure,
"a reply the grader cannot read"); the grader never imports the submission.

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
        self.shows = adapter.shows  # the fields every observation of this shape gives: the grader's copy
        self.names = dict(getattr(adapter, "names", {}))  # the pool's words: the grader's copy, never the child's
        self.written = getattr(adapter, "written", None)  # its calls as lines (oracle/prefix/calls.py)
        self.started = False

    def _ask(self, request: dict[str, Any], doing: str) -> Any:
        return self.child.ask(request, doing).get("ret")

    def _call(self, method: str, *args: Any) -> Any:
        return self._ask({"op": "call", "method": method, "args": list(args)}, f"in {method}")

    def start(self, num_blocks: int, block_size: int) -> None:
        self._ask({"op": "new"}, "while starting")
        self.started = True
        self._call("start", num_blocks, block_size)

    def __getattr__(self, method: str) -> Any:
        """admit, lookup, append, commit, fork, copy, free, reset: the child's answer, read as READ says."""
        if method not in READ:
            raise AttributeError(method)
        return lambda *args: READ[method](self._call(method, *args), self)

    def observe(self) -> Observation:
        seen = self._call("observe")
        if type(seen) is not dict or set(seen) - {"lengths"} != {"tables", "free", "ref_counts", "hashes", "indexed"}:
            raise self._unreadable("observe did not answer the five fields of an observation")
        tables = _pairs(seen["tables"], "tables", lambda v: tuple(_ints(v, "a block table", self, none=True)), self)
        if tables is None:
            raise self._unreadable("observe's tables is null")
        if hidden := sorted(name for name in self.shows if seen.get(name) is None):
            raise self._unreadable(f"observe's {hidden[0]} is null, where every {self.shape} pool shows it")
        return Observation(
            tables=tables,
            free=None if seen["free"] is None else tuple(_ints(seen["free"], "free", self)),
            ref_counts=_pairs(seen["ref_counts"], "ref_counts", lambda v: _int(v, "a ref count", self), self),
            hashes=_pairs(seen["hashes"], "hashes", lambda v: _text(v, self), self),
            indexed=None if seen["indexed"] is None else tuple(_ints(seen["indexed"], "indexed", self)),
            lengths=_pairs(seen.get("lengths"), "lengths", lambda v: _int(v, "a token count", self), self),
            names=self.names,
        )

    def end_process(self) -> None:
        """Ends the process this adapter's calls run in: the next call starts a fresh one, where nothing an earlier
        process did is left (checks.py's alone: each directed program runs on the first pool its process makes)."""
        self.child.stop()

    def _unreadable(self, why: str) -> ImplementationFailure:
        """The child answered with a shape no adapter gives: it is stopped, and the step fails."""
        self.child.stop()
        return ImplementationFailure(f"sent a reply the grader cannot read ({why})")

    def close(self) -> None:
        if self.started and self.child.running:
            try:
                self._call("close")
            except ImplementationFailure:
                pass
        self.started = False


def _admitted(answer: Any, adapter: RemoteAdapter) -> tuple[bool, int | None]:
    if type(answer) is not list or len(answer) != 2 or type(answer[0]) is not bool:
        raise adapter._unreadable("admit did not answer [accepted, hits]")
    return answer[0], _optional_int(answer[1], "admit's hits", adapter)


def _int(value: Any, what: str, adapter: RemoteAdapter) -> int:
    if type(value) is not int or not -(1 << 63) <= value < 1 << 63:
        raise adapter._unreadable(f"{what} is not a 64-bit integer")
    return value


def _optional_int(value: Any, what: str, adapter: RemoteAdapter) -> int | None:
    return None if value is None else _int(value, what, adapter)


def _bool(value: Any, what: str, adapter: RemoteAdapter) -> bool:
    if type(value) is not bool:
        raise adapter._unreadable(f"{what} did not answer true or false")
    return value


def _text(value: Any, adapter: RemoteAdapter) -> str:
    if type(value) is not str:
        raise adapter._unreadable("a hash is not text")
    return value[:200]


def _ints(value: Any, what: str, adapter: RemoteAdapter, none: bool = False) -> list[Any]:
    if type(value) is not list:
        raise adapter._unreadable(f"{what} is not a list")
    for item in value:
        if not (none and item is None):
            _int(item, f"an entry of {what}", adapter)
    return value


def _pairs(value: Any, what: str, check: Any, adapter: RemoteAdapter) -> dict[int, Any] | None:
    """A dict sent as [[key, value], ...] (block or request ids as keys), each value checked."""
    if value is None:
        return None
    if type(value) is not list or any(type(pair) is not list or len(pair) != 2 for pair in value):
        raise adapter._unreadable(f"{what} is not a list of [id, value] pairs")
    return {_int(key, f"an id of {what}", adapter): check(item) for key, item in value}


# each call the adapter protocol makes (oracle/prefix/adapters/__init__.py): how its answer is read
READ = {"admit": _admitted, "lookup": lambda value, a: _ints(value, "get_computed_blocks", a),
        "append": lambda value, a: _bool(value, "append", a), "commit": lambda value, a: None,
        "fork": lambda value, a: _optional_int(value, "fork", a), "copy": lambda value, a: _bool(value, "copy", a),
        "free": lambda value, a: None, "reset": lambda value, a: _bool(value, "reset", a)}


class RemotePrefix:
    """One child process serving a submission through a shape's adapter; calling it makes an adapter."""

    def __init__(self, target: PythonTarget, adapter: type, policy: Policy, sandbox: Sandbox, timeout: float = 2.0,
                 site: Path | None = None):
        self.adapter, self.policy = adapter, policy
        support = support_area(sandbox)
        options = (str(support), f"{adapter.__module__}:{adapter.__name__}", json.dumps(dataclasses.asdict(policy)))
        self.child = PythonChild(target, sandbox, server=SERVER, failure=ImplementationFailure, timeout=timeout,
                                 support=support, server_args=options, site=site)

    def load(self) -> None:
        self.child.start()

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child, self.adapter, self.policy)

    def close(self) -> None:
        self.child.close()
