"""A prefix-family submission graded from outside, on the core's remote implementation (oracle/served.py): its
module and the shape's adapter run in a sandboxed child (oracle/prefix/serve.py over oracle/child.py's process and
pipes), and the grader holds the core's RemoteAdapter, whose every call of the table below the child answers. Each
answer must have its declared shape (oracle/reply_shape.py), else it is "a reply the grader cannot read", the
submission's failure; then it is read here (an observation as an Observation, whose fields every pool of the shape
shows must not be null). The grader never imports the submission.

    served = served_pool(locate("student/kv_cache.py"), LabAdapter, LAB, sandbox)
    served.load()                  # LoadFailure when it does not load
    adapter = served()             # one per machine run, like any adapter factory
"""

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from oracle.child import PythonTarget
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import Policy
from oracle.reply_shape import ANY, Int, OneOf
from oracle.sandbox import Sandbox
from oracle.served import RemoteAdapter, Served

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


def _pairs(value: Any) -> Any:
    return OneOf([(Int(), value)], None)  # a dict sent as [[id, value], ...], or null: not shown


# each call of the adapter protocol (oracle/prefix/adapters/__init__.py) crosses to the child, and answers this shape
REPLIES = {
    "start": ANY, "admit": (bool, OneOf(Int(), None)), "lookup": [Int()], "append": bool, "commit": ANY,
    "fork": OneOf(Int(), None), "copy": bool, "free": ANY, "reset": bool, "close": ANY,
    "observe": {"tables": [(Int(), [OneOf(Int(), None)])], "free": OneOf([Int()], None), "ref_counts": _pairs(Int()),
                "hashes": _pairs(str), "indexed": OneOf([Int()], None), "lengths": _pairs(Int())},
}


def _dict(pairs: list | None, value: Any = lambda v: v) -> dict | None:
    return None if pairs is None else {key: value(item) for key, item in pairs}


def observation(seen: dict, adapter: RemoteAdapter) -> Observation:
    """An observation as the grader reads it; one that hides a field every pool of its shape shows is unreadable."""
    if hidden := sorted(name for name in adapter.shows if seen[name] is None):
        raise adapter.unreadable(f"observe's {hidden[0]} is null, where every {adapter.shape} pool shows it")
    return Observation(tables=_dict(seen["tables"], tuple), free=None if seen["free"] is None else tuple(seen["free"]),
                       ref_counts=_dict(seen["ref_counts"]), hashes=_dict(seen["hashes"], lambda text: text[:200]),
                       indexed=None if seen["indexed"] is None else tuple(seen["indexed"]),
                       lengths=_dict(seen["lengths"]), names=adapter.names)


READ = {"admit": lambda answer, _: tuple(answer), "commit": lambda *_: None, "free": lambda *_: None,
        "observe": observation}


def facts(adapter: type, policy: Policy) -> dict[str, Any]:
    """What the grader knows of the shape's adapter without asking the child: its own copy."""
    return {"policy": policy, "shape": adapter.shape, "supports": adapter.supports, "shows": adapter.shows,
            "names": dict(getattr(adapter, "names", {})),  # the pool's words (oracle/prefix/observation.py)
            "written": getattr(adapter, "written", None)}  # its calls as lines (oracle/prefix/calls.py)


def served_pool(target: PythonTarget, adapter: type, policy: Policy, sandbox: Sandbox, timeout: float = 2.0,
                site: Path | None = None) -> Served:
    """One child process serving a submission through a shape's adapter; calling it makes an adapter."""
    support = support_area(sandbox)
    options = (str(support), f"{adapter.__module__}:{adapter.__name__}", json.dumps(dataclasses.asdict(policy)))
    return Served(target, sandbox, server=SERVER, failure=ImplementationFailure, renew="start", replies=REPLIES,
                  timeout=timeout, methods=tuple(REPLIES), read=READ, facts=facts(adapter, policy), support=support,
                  server_args=options, site=site)
